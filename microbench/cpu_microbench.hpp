// CPU microbenchmarks that describe a processor as device features: each function runs one
// timed repetition and returns its figure; nitro.devices.microbench repeats until stable.
#pragma once
#include <cstddef>

namespace nitro::microbench {

// Nanoseconds per atomic increment, every thread hitting one shared counter.
double atomic_contended_ns(std::size_t increments_per_thread);
// Nanoseconds per atomic increment, each thread on its own cache line.
double atomic_uncontended_ns(std::size_t increments_per_thread);
// STREAM triad a = b + s*c over n doubles per array, all threads; GB/s (3 arrays moved).
double stream_triad_gbps(std::size_t n);
// Fused multiply-adds on independent accumulators, all threads; GFLOP/s (2 flops per FMA).
double peak_gflops_dp(std::size_t iterations);
double peak_gflops_sp(std::size_t iterations);

}  // namespace nitro::microbench
