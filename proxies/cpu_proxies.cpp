#include "cpu_proxies.hpp"

#include <omp.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace nitro::proxies {
namespace {

constexpr int kSlots = 5;
constexpr std::size_t kCacheResident = 4096;       // 32 KiB of doubles: stays in L1
constexpr std::size_t kStreamElements = 1 << 24;   // 128 MiB of doubles: far beyond the caches

template <class Real>
std::uint64_t flops(int phi, std::size_t n) {
  Real acc = Real(1);
  std::uint64_t ints = 0;
#pragma omp parallel for reduction(+ : acc, ints) schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    Real x = static_cast<Real>(i & 1023) * Real(1e-3);
    for (int s = 0; s < kSlots; ++s) {
      if (s < phi) x = x * Real(0.999) + Real(1e-4);
      else ints += (i >> s) & 1;
    }
    acc += x;
  }
  volatile Real keep = acc + static_cast<Real>(ints);
  (void)keep;
  return static_cast<std::uint64_t>(phi) * n;
}

std::uint64_t atomics(int phi, std::size_t n) {
  std::vector<std::atomic<std::uint64_t>> bins(256);
  std::uint64_t ints = 0;
#pragma omp parallel for reduction(+ : ints) schedule(static)
  for (std::size_t i = 0; i < n; ++i)
    for (int s = 0; s < kSlots; ++s) {
      if (s < phi) bins[(i * 7 + s) & 255].fetch_add(1, std::memory_order_relaxed);
      else ints += (i >> s) & 1;
    }
  std::uint64_t total = 0;
  for (auto& b : bins) total += b.load();
  volatile std::uint64_t keep = ints;
  (void)keep;
  return total;
}

std::uint64_t loads(int phi, std::size_t n, std::size_t span) {
  static std::vector<double> big;
  if (big.size() < span) big.assign(span, 1.0);
  const double* data = big.data();
  double acc = 0;
  std::uint64_t ints = 0;
#pragma omp parallel for reduction(+ : acc, ints) schedule(static)
  for (std::size_t i = 0; i < n; ++i)
    for (int s = 0; s < kSlots; ++s) {
      // a stride of 8 doubles touches a new cache line every load
      if (s < phi) acc += data[((i * kSlots + s) * 8) % span];
      else ints += (i >> s) & 1;
    }
  volatile double keep = acc + static_cast<double>(ints);
  (void)keep;
  return static_cast<std::uint64_t>(phi) * n;
}

}  // namespace

std::uint64_t run(Kind kind, int phi, std::size_t n) {
  if (phi < 0 || phi > kSlots) throw std::invalid_argument("proxy intensity must be 0..5");
  switch (kind) {
    case Kind::SpFlop: return flops<float>(phi, n);
    case Kind::DpFlop: return flops<double>(phi, n);
    case Kind::Atomic: return atomics(phi, n);
    case Kind::MemBw: return loads(phi, n, kStreamElements);
    case Kind::ShMemBw: return loads(phi, n, kCacheResident);
  }
  throw std::invalid_argument("unknown proxy kind");
}

}  // namespace nitro::proxies
