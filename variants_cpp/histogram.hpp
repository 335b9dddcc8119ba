// Histogram code variants for a multi-core CPU: 8-bit values into 256 bins.
//
// The six variants of the architecture-adaptive tuning paper (Figure 3), adapted from
// GPU thread blocks to CPU threads: {sort then run-length, global atomics, privatised
// ("shared") atomics} x {even share of the input, dynamic work queue}.
// Every function overwrites bins[0..255] with the counts of data[0..n).
#pragma once
#include <cstddef>
#include <cstdint>

namespace nitro {

constexpr int kHistogramBins = 256;

void histogram_sort_even(const std::uint8_t* data, std::size_t n, std::uint64_t* bins);
void histogram_sort_dynamic(const std::uint8_t* data, std::size_t n, std::uint64_t* bins);
void histogram_global_atomic_even(const std::uint8_t* data, std::size_t n, std::uint64_t* bins);
void histogram_global_atomic_dynamic(const std::uint8_t* data, std::size_t n, std::uint64_t* bins);
void histogram_shared_atomic_even(const std::uint8_t* data, std::size_t n, std::uint64_t* bins);
void histogram_shared_atomic_dynamic(const std::uint8_t* data, std::size_t n, std::uint64_t* bins);

// Input feature: population standard deviation of data[0], data[step], ... with
// step = max(1, n / samples) (NumPy's ``data[::step].std()``), 0 for n = 0.
double histogram_subsample_std(const std::uint8_t* data, std::size_t n, std::size_t samples);

}  // namespace nitro
