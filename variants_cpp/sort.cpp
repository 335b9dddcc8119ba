// Sort code variants (see sort.hpp).
#include "sort.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace nitro {
namespace {

constexpr std::size_t kTile = 2048;                   // merge sort: keys per sorted tile
constexpr std::size_t kSegmentBytes = 256 * 1024;     // locality sort: one L2-sized segment
constexpr std::size_t kParallelMin = 1 << 15;         // fewer keys: one thread (no fork/join cost)

// Uninitialised scratch (a zero-filled std::vector would cost one more pass over memory).
template <class T>
std::unique_ptr<T[]> scratch(std::size_t n) { return std::unique_ptr<T[]>(new T[n]); }

template <class T>
void parallel_copy(const T* src, std::size_t n, T* dst) {
#pragma omp parallel if (n >= kParallelMin)
  {
    const std::size_t t = omp_get_thread_num(), p = omp_get_num_threads();
    const std::size_t lo = n * t / p, hi = n * (t + 1) / p;
    if (hi > lo) std::memcpy(dst + lo, src + lo, (hi - lo) * sizeof(T));
  }
}

// out = in with NaNs moved to the end (order of the other keys kept); returns the count of
// non-NaN keys.
template <class T>
std::size_t copy_nans_last(const T* in, std::size_t n, T* out) {
  std::vector<std::size_t> nans(omp_get_max_threads() + 1, 0);
  std::size_t total_nans = 0;
#pragma omp parallel if (n >= kParallelMin)
  {
    const std::size_t t = omp_get_thread_num(), p = omp_get_num_threads();
    const std::size_t lo = n * t / p, hi = n * (t + 1) / p;
    std::size_t count = 0;
    for (std::size_t i = lo; i < hi; ++i) count += in[i] != in[i];
    nans[t + 1] = count;
#pragma omp barrier
#pragma omp single
    {
      for (std::size_t q = 1; q <= p; ++q) nans[q] += nans[q - 1];
      total_nans = nans[p];
    }
    if (total_nans == 0) {
      if (hi > lo) std::memcpy(out + lo, in + lo, (hi - lo) * sizeof(T));
    } else {
      std::size_t pos = lo - nans[t];
      for (std::size_t i = lo; i < hi; ++i)
        if (in[i] == in[i]) out[pos++] = in[i];
    }
  }
  std::fill(out + (n - total_nans), out + n, std::numeric_limits<T>::quiet_NaN());
  return n - total_nans;
}

// Merge path: how many of the first k merged keys of (a[0..na), b[0..nb)) come from a
// (ties taken from a first, as std::merge does).
template <class T>
std::size_t co_rank(std::size_t k, const T* a, std::size_t na, const T* b, std::size_t nb) {
  std::size_t lo = k > nb ? k - nb : 0, hi = std::min(k, na);
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= b[k - mid - 1]) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// One merge pass: runs [r, r + width) of src are merged pairwise into dst. The output is
// cut into equal pieces (several per thread); a piece may span several pairs.
// With `skip_ordered`, a pair whose runs do not overlap is copied in order, not merged.
template <class T>
void merge_pass(const T* src, T* dst, std::size_t n, std::size_t width, bool skip_ordered) {
  const std::size_t pieces = static_cast<std::size_t>(omp_get_max_threads()) * 4;
#pragma omp parallel for schedule(dynamic, 1) if (n >= kParallelMin)
  for (std::size_t piece = 0; piece < pieces; ++piece) {
    const std::size_t start = n * piece / pieces, stop = n * (piece + 1) / pieces;
    std::size_t pos = start;
    while (pos < stop) {
      const std::size_t lo = pos - pos % (2 * width);
      const std::size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      const std::size_t s = pos - lo, e = std::min(stop, hi) - lo;  // output range of this pair
      const T* a = src + lo;
      const T* b = src + mid;
      const std::size_t na = mid - lo, nb = hi - mid;
      if (nb == 0 || (skip_ordered && a[na - 1] <= b[0])) {
        std::memcpy(dst + lo + s, src + lo + s, (e - s) * sizeof(T));
      } else if (skip_ordered && b[nb - 1] < a[0]) {  // b entirely before a
        for (std::size_t k = s; k < e; ++k) dst[lo + k] = k < nb ? b[k] : a[k - nb];
      } else {
        const std::size_t i0 = co_rank(s, a, na, b, nb), i1 = co_rank(e, a, na, b, nb);
        std::merge(a + i0, a + i1, b + (s - i0), b + (e - i1), dst + lo + s);
      }
      pos = lo + e;
    }
  }
}

// Merge passes from runs of `width` until one run remains; the result ends in out.
template <class T>
void merge_runs(T* out, std::size_t n, std::size_t width, bool skip_ordered) {
  if (width >= n) return;
  auto tmp = scratch<T>(n);
  T* src = out;
  T* dst = tmp.get();
  for (; width < n; width *= 2) {
    merge_pass(src, dst, n, width, skip_ordered);
    std::swap(src, dst);
  }
  if (src != out) parallel_copy(src, n, out);
}

// -- radix: order-preserving unsigned image of a float key
// (may_alias: the keys are read and written through these types in the output buffer)
template <class T> struct Bits;
template <> struct Bits<float> { typedef std::uint32_t __attribute__((may_alias)) U; };
template <> struct Bits<double> { typedef std::uint64_t __attribute__((may_alias)) U; };

template <class U>
U to_ordered(U u) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  return (u & sign) ? ~u : (u | sign);
}

template <class U>
U from_ordered(U u) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  return (u & sign) ? (u & ~sign) : ~u;
}

}  // namespace

template <class T>
void sort_merge(const T* in, std::size_t n, T* out) {
  const std::size_t valid = copy_nans_last(in, n, out);
  const std::size_t tiles = (valid + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (valid >= kParallelMin)
  for (std::size_t t = 0; t < tiles; ++t)
    std::sort(out + t * kTile, out + std::min(valid, (t + 1) * kTile));
  merge_runs(out, valid, kTile, false);
}

template <class T>
void sort_locality(const T* in, std::size_t n, T* out) {
  const std::size_t valid = copy_nans_last(in, n, out);
  const std::size_t seg = kSegmentBytes / sizeof(T);
  const std::size_t segments = (valid + seg - 1) / seg;
#pragma omp parallel for schedule(dynamic, 1) if (valid >= kParallelMin)
  for (std::size_t s = 0; s < segments; ++s) {
    T* first = out + s * seg;
    T* last = out + std::min(valid, (s + 1) * seg);
    if (std::is_sorted(first, last)) continue;
    if (std::is_sorted(first, last, [](T x, T y) { return y < x; })) std::reverse(first, last);
    else std::sort(first, last);
  }
  merge_runs(out, valid, seg, true);
}

template <class T>
void sort_radix(const T* in, std::size_t n, T* out, int digit_bits) {
  if (digit_bits != 8 && digit_bits != 11)
    throw std::invalid_argument("sort_radix: digit_bits must be 8 or 11");
  using U = typename Bits<T>::U;
  static_assert(sizeof(U) == sizeof(T), "key and image differ in size");
  constexpr int key_bits = sizeof(U) * 8;
  const std::size_t valid = copy_nans_last(in, n, out);
  auto tmp = scratch<U>(valid);
  U* src = reinterpret_cast<U*>(out);
  U* dst = tmp.get();
#pragma omp parallel for schedule(static) if (valid >= kParallelMin)
  for (std::size_t i = 0; i < valid; ++i) src[i] = to_ordered(src[i]);

  const std::size_t buckets = std::size_t(1) << digit_bits;
  const int threads = omp_get_max_threads();
  std::vector<std::size_t> counts(buckets * threads);
  for (int shift = 0; shift < key_bits; shift += digit_bits) {
    const U mask = static_cast<U>(buckets - 1);
    bool skip = false;
#pragma omp parallel num_threads(threads) if (valid >= kParallelMin)
    {
      const std::size_t t = omp_get_thread_num(), p = omp_get_num_threads();
      const std::size_t lo = valid * t / p, hi = valid * (t + 1) / p;
      std::size_t* mine = counts.data() + t * buckets;
      std::fill(mine, mine + buckets, 0);
      for (std::size_t i = lo; i < hi; ++i) ++mine[(src[i] >> shift) & mask];
#pragma omp barrier
#pragma omp single
      {  // exclusive offsets in (digit, thread) order: a stable scatter
        std::size_t sum = 0;
        for (std::size_t d = 0; d < buckets; ++d) {
          std::size_t digit_total = 0;
          for (std::size_t q = 0; q < p; ++q) {
            const std::size_t c = counts[q * buckets + d];
            counts[q * buckets + d] = sum;
            sum += c;
            digit_total += c;
          }
          if (digit_total == valid) skip = true;  // every key has this digit
        }
      }
      if (!skip) {
        for (std::size_t i = lo; i < hi; ++i) dst[mine[(src[i] >> shift) & mask]++] = src[i];
      }
    }
    if (!skip) std::swap(src, dst);
  }
  T* result = out;
#pragma omp parallel for schedule(static) if (valid >= kParallelMin)
  for (std::size_t i = 0; i < valid; ++i) {
    const U u = from_ordered(src[i]);
    std::memcpy(result + i, &u, sizeof(U));
  }
}

template void sort_merge<float>(const float*, std::size_t, float*);
template void sort_merge<double>(const double*, std::size_t, double*);
template void sort_locality<float>(const float*, std::size_t, float*);
template void sort_locality<double>(const double*, std::size_t, double*);
template void sort_radix<float>(const float*, std::size_t, float*, int);
template void sort_radix<double>(const double*, std::size_t, double*, int);

}  // namespace nitro
