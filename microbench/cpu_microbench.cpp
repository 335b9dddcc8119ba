#include "cpu_microbench.hpp"

#include <omp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

namespace nitro::microbench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct alignas(64) PaddedCounter {
  std::atomic<long> value{0};
};

template <class Real>
double peak_gflops(std::size_t iterations) {
  constexpr int kLanes = 32;  // independent accumulators: enough to hide FMA latency
  const int threads = omp_get_max_threads();
  std::vector<Real> sink(threads);
  const auto start = Clock::now();
#pragma omp parallel
  {
    Real acc[kLanes];
    for (int l = 0; l < kLanes; ++l) acc[l] = Real(1) + Real(l) * Real(1e-3);
    const Real a = Real(0.999999), b = Real(1e-7);
    for (std::size_t i = 0; i < iterations; ++i) {
#pragma omp simd
      for (int l = 0; l < kLanes; ++l) acc[l] = acc[l] * a + b;
    }
    Real total = 0;
    for (int l = 0; l < kLanes; ++l) total += acc[l];
    sink[omp_get_thread_num()] = total;
  }
  const double secs = seconds_since(start);
  volatile Real keep = sink[0];
  (void)keep;
  return 2.0 * kLanes * static_cast<double>(iterations) * threads / secs / 1e9;
}

}  // namespace

double atomic_contended_ns(std::size_t increments_per_thread) {
  PaddedCounter counter;
  const auto start = Clock::now();
#pragma omp parallel
  for (std::size_t i = 0; i < increments_per_thread; ++i)
    counter.value.fetch_add(1, std::memory_order_relaxed);
  return seconds_since(start) * 1e9 / static_cast<double>(increments_per_thread);
}

double atomic_uncontended_ns(std::size_t increments_per_thread) {
  const int threads = omp_get_max_threads();
  std::unique_ptr<PaddedCounter[]> counters(new PaddedCounter[threads]);
  const auto start = Clock::now();
#pragma omp parallel
  {
    auto& c = counters[omp_get_thread_num()].value;
    for (std::size_t i = 0; i < increments_per_thread; ++i) c.fetch_add(1, std::memory_order_relaxed);
  }
  return seconds_since(start) * 1e9 / static_cast<double>(increments_per_thread);
}

double stream_triad_gbps(std::size_t n) {
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {  // first touch by the thread that later uses the page
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  const double s = 3.0;
  const auto start = Clock::now();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
  const double secs = seconds_since(start);
  volatile double keep = a[n / 2];
  (void)keep;
  return 3.0 * sizeof(double) * static_cast<double>(n) / secs / 1e9;
}

double peak_gflops_dp(std::size_t iterations) { return peak_gflops<double>(iterations); }
double peak_gflops_sp(std::size_t iterations) { return peak_gflops<float>(iterations); }

}  // namespace nitro::microbench
