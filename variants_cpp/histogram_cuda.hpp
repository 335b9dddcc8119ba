// Histogram code variants for an NVIDIA GPU: uint8 data into 256 unsigned 64-bit bins.
//
// The paper's six variants (Figure 3): {sort then run-length, global-memory atomics,
// per-block shared-memory atomics} x {even share of the input, dynamic work counter}.
// Host launchers take device pointers as integers (e.g. pycuda's ``int(gpuarray.gpudata)``)
// and a stream handle (0: the default stream); they enqueue work on that stream and return
// without synchronising. Every launcher overwrites bins[0..255] with the counts of data[0..n)
// and throws std::runtime_error on a CUDA error, std::invalid_argument when n > kMaxItems.
// Plain C++ header: no CUDA header is needed to include it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nitro::cuda {

constexpr int kHistogramBins = 256;
// CUB's device-wide sort counts items with int; all variants share the limit.
constexpr std::size_t kMaxItems = 2147483647;

void histogram_sort_even(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream);
void histogram_sort_dynamic(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream);
void histogram_global_atomic_even(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream);
void histogram_global_atomic_dynamic(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream);
void histogram_shared_atomic_even(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream);
void histogram_shared_atomic_dynamic(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream);

}  // namespace nitro::cuda
