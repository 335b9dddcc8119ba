#include "cpu_proxies.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace nitro::proxies {
namespace {

constexpr int kSlots = 5;
constexpr std::size_t kLine = 8;                   // uint64 per 64-byte cache line
constexpr std::size_t kCacheResident = 2048;       // 16 KiB: stays in L1
constexpr std::size_t kStreamElements = 1 << 24;   // 128 MiB: far beyond the caches

// Every element has five slots of one machine instruction each: phi of them of the proxy's
// kind, the others an integer add on a register. The empty asm statements keep each value in
// a register and stop the compiler from merging, vectorising or removing the slots, so that the
// instruction mix is what the source says (verified by nitro.profiling.cpu). Four elements per
// loop iteration keep the loop's own instructions a small part of the mix.
template <class T>
inline void keep(T& v) {
  if constexpr (std::is_floating_point_v<T>) asm volatile("" : "+x"(v));
  else asm volatile("" : "+r"(v));
}

#define NITRO_SLOT(S, KIND)                                         \
  if constexpr ((S) < PHI) { KIND(S); } else { k##S += step; keep(k##S); }
#define NITRO_ELEMENT(KIND) \
  NITRO_SLOT(0, KIND) NITRO_SLOT(1, KIND) NITRO_SLOT(2, KIND) NITRO_SLOT(3, KIND) NITRO_SLOT(4, KIND)
#define NITRO_FILLERS                                          \
  std::uint64_t k0 = 1, k1 = 2, k2 = 3, k3 = 4, k4 = 5;         \
  const std::uint64_t step = static_cast<std::uint64_t>(omp_get_thread_num()) + 1
#define NITRO_FILLER_SUM (k0 + k1 + k2 + k3 + k4)

// This thread's even share [begin, end) of [0, n) inside a parallel region (no barriers).
inline std::pair<std::size_t, std::size_t> share(std::size_t n) {
  const std::size_t t = omp_get_thread_num(), T = omp_get_num_threads();
  return {n * t / T, n * (t + 1) / T};
}

// Runs ELEMENT(i) for i in [begin, end), four elements per loop iteration.
#define NITRO_FOR_RANGE(begin, end, ELEMENT)                                      \
  {                                                                               \
    std::size_t i_ = (begin);                                                     \
    for (; i_ + 4 <= (end); i_ += 4) { ELEMENT(i_) ELEMENT(i_ + 1) ELEMENT(i_ + 2) ELEMENT(i_ + 3) } \
    for (; i_ < (end); ++i_) { ELEMENT(i_) }                                      \
  }

template <int PHI, class Real>
std::uint64_t flops(std::size_t n) {
  double total = 0;
  std::uint64_t ints = 0;
#pragma omp parallel reduction(+ : total, ints)
  {
    Real a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5;
    const Real b = Real(1e-7) * static_cast<Real>(omp_get_thread_num() + 1);
    NITRO_FILLERS;
#define NITRO_FLOP(S) a##S += b; keep(a##S);
#define NITRO_FLOP_ELEMENT(i) NITRO_ELEMENT(NITRO_FLOP)
    const auto [begin, end] = share(n);
    NITRO_FOR_RANGE(begin, end, NITRO_FLOP_ELEMENT)
    total += static_cast<double>(a0 + a1 + a2 + a3 + a4);
    ints += NITRO_FILLER_SUM;
  }
  volatile double sink = total + static_cast<double>(ints);
  (void)sink;
  return static_cast<std::uint64_t>(PHI) * n;
}

template <int PHI>
std::uint64_t atomics(std::size_t n) {
  std::vector<std::uint64_t> bins(kSlots * kLine, 0);  // one cache line per slot, shared by all threads
  std::uint64_t* const bin = bins.data();
  std::uint64_t ints = 0;
#pragma omp parallel reduction(+ : ints)
  {
    NITRO_FILLERS;
#define NITRO_ATOMIC(S) __atomic_fetch_add(bin + (S) * kLine, 1, __ATOMIC_RELAXED);
#define NITRO_ATOMIC_ELEMENT(i) NITRO_ELEMENT(NITRO_ATOMIC)
    const auto [begin, end] = share(n);
    NITRO_FOR_RANGE(begin, end, NITRO_ATOMIC_ELEMENT)
    ints += NITRO_FILLER_SUM;
  }
  volatile std::uint64_t sink = ints;
  (void)sink;
  std::uint64_t total = 0;
  for (std::uint64_t v : bins) total += v;
  return total;
}

// Every load of the kind touches a new cache line; the data wraps around after `span` elements.
template <int PHI>
std::uint64_t loads(std::size_t n, std::size_t span) {
  static std::vector<std::uint64_t> big;
  if (big.size() < span) big.assign(span, 1);
  const std::uint64_t* const data = big.data();
  const std::size_t per_pass = span / (kSlots * kLine);
  std::uint64_t sum = 0;
#pragma omp parallel reduction(+ : sum)
  {
    std::uint64_t c0 = 0, c1 = 0, c2 = 0, c3 = 0, c4 = 0;
    NITRO_FILLERS;
    const auto [begin, end] = share(n);
    for (std::size_t i = begin; i < end;) {  // element i reads pass position i % per_pass
      const std::size_t j = i % per_pass, count = std::min(per_pass - j, end - i);
#define NITRO_LOAD(S) c##S += p[(S) * kLine]; keep(c##S);
#define NITRO_LOAD_ELEMENT(k) { const std::uint64_t* p = data + (k) * kSlots * kLine; NITRO_ELEMENT(NITRO_LOAD) }
      NITRO_FOR_RANGE(j, j + count, NITRO_LOAD_ELEMENT)
      i += count;
    }
    sum += c0 + c1 + c2 + c3 + c4 + (NITRO_FILLER_SUM & 1);
  }
  volatile std::uint64_t sink = sum;
  (void)sink;
  return static_cast<std::uint64_t>(PHI) * n;
}

template <int PHI>
std::uint64_t run_phi(Kind kind, std::size_t n) {
  switch (kind) {
    case Kind::SpFlop: return flops<PHI, float>(n);
    case Kind::DpFlop: return flops<PHI, double>(n);
    case Kind::Atomic: return atomics<PHI>(n);
    case Kind::MemBw: return loads<PHI>(n, kStreamElements);
    case Kind::ShMemBw: return loads<PHI>(n, kCacheResident);
  }
  throw std::invalid_argument("unknown proxy kind");
}

}  // namespace

std::uint64_t run(Kind kind, int phi, std::size_t n) {
  switch (phi) {
    case 0: return run_phi<0>(kind, n);
    case 1: return run_phi<1>(kind, n);
    case 2: return run_phi<2>(kind, n);
    case 3: return run_phi<3>(kind, n);
    case 4: return run_phi<4>(kind, n);
    case 5: return run_phi<5>(kind, n);
  }
  throw std::invalid_argument("proxy intensity must be 0..5");
}

}  // namespace nitro::proxies
