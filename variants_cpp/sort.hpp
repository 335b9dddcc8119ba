// Sort code variants for a multi-core CPU: 32- and 64-bit floating-point keys.
//
// The paper's three GPU sorts (ModernGPU merge sort and locality sort, CUB radix sort),
// adapted to OpenMP threads. Every function writes the ascending order of in[0..n) to
// out[0..n) and leaves the input untouched. NaNs go last, as in np.sort: they are moved to
// the end while copying (as the canonical quiet NaN) and the other keys are sorted.
//   merge:     sorted tiles, then pairwise merge passes; each pass splits its whole output
//              evenly among threads by merge-path co-ranking, so the last passes stay parallel.
//   locality:  cache-sized segments taken from a dynamic work queue (already ascending ones
//              are kept, descending ones reversed, others sorted), then merge passes that copy
//              a pair of runs instead of merging when the runs do not overlap.
//   radix:     hybrid MSD+LSD radix sort of the keys' order-preserving unsigned images
//              (sign-flip transform, fused into the first and last passes). One read sweep
//              counts the top 12-14 (float32) or 16 (float64) bits per thread; consecutive bins
//              are merged into cache-sized buckets; one MSD scatter moves the keys (NaNs
//              dropped) into the buckets; then the threads take buckets from a dynamic queue,
//              largest first, and sort each in cache: two LSD passes on its varying bits (the
//              top ones for float64, then insertion-sorted runs of equal top bits; large runs
//              recursively), the last pass writing the float keys to out.
//   simd_sample (built with Highway, libhwy-dev): sample sort. Splitters from a strided
//              sample of 1,024 keys cut the keys into 4 buckets per thread; one counting sweep
//              and one scatter move them into place (NaNs to the end), then the threads take
//              buckets, largest first, and sort each in place with Highway's vectorised
//              quicksort (vqsort: AVX-512, AVX2, SSE4 or NEON, chosen at run time). +inf
//              keys have a bucket of their own (vqsort 1.0 mishandles them).
#pragma once
#include <cstddef>

namespace nitro {

template <class T> void sort_merge(const T* in, std::size_t n, T* out);
template <class T> void sort_locality(const T* in, std::size_t n, T* out);
template <class T> void sort_radix(const T* in, std::size_t n, T* out);  // n < 2^32, else locality
#ifdef NITRO_WITH_HWY
template <class T> void sort_simd_sample(const T* in, std::size_t n, T* out);
#endif

}  // namespace nitro
