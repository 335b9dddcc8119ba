// Sort code variants (see sort.hpp).
#include "sort.hpp"

#include <omp.h>

#ifdef NITRO_WITH_HWY
#include <hwy/contrib/sort/vqsort.h>
#endif

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
constexpr std::size_t kSampleKeys = 1024;             // simd_sample: keys sampled for splitters
constexpr std::size_t kSampleBucketsPerThread = 4;    // simd_sample: buckets per thread
constexpr std::size_t kMaxSampleBuckets = 64;         // simd_sample: at most this many buckets
constexpr std::size_t kBlock = 64;                    // simd_sample: keys classified side by side

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

// std::merge without branches on the comparison (compiled to conditional moves): random
// keys mispredict a branch on half of the steps. Ties are taken from a first, as std::merge.
template <class T>
void merge_branchless(const T* a, const T* a_end, const T* b, const T* b_end, T* out) {
  const std::size_t na = a_end - a, nb = b_end - b;
  std::size_t i = 0, j = 0;
  while (i < na && j < nb) {
    const T x = a[i], y = b[j];
    const std::size_t take_b = y < x;
    out[i + j] = std::min(x, y);   // == take_b ? y : x (ties from a; no NaNs here)
    i += 1 - take_b;
    j += take_b;
  }
  out = std::copy(a + i, a_end, out + i + j);
  std::copy(b + j, b_end, out);
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
        merge_branchless(a + i0, a + i1, b + (s - i0), b + (e - i1), dst + lo + s);
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
template <class T> struct Bits;
template <> struct Bits<float> { typedef std::uint32_t U; };
template <> struct Bits<double> { typedef std::uint64_t U; };

// (branch-free: signs are random in general; `fill` is all ones where the sign bit is set)
template <class U>
U sign_fill(U u) {
  return static_cast<U>(static_cast<typename std::make_signed<U>::type>(u) >> (sizeof(U) * 8 - 1));
}

template <class U>
U to_ordered(U u) {  // negative: all bits flipped; positive: sign bit set
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  return u ^ (sign_fill(u) | sign);
}

template <class U>
U from_ordered(U u) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  return u ^ (~sign_fill(u) | sign);
}

template <class T, class U = typename Bits<T>::U>
U ordered_image(T x) {
  U u;
  std::memcpy(&u, &x, sizeof u);
  return to_ordered(u);
}

template <class T, class U = typename Bits<T>::U>
void store_key(T* dst, U ordered) {
  const U u = from_ordered(ordered);
  std::memcpy(dst, &u, sizeof u);
}

int bit_width(std::uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

constexpr int kMaxDigitBits = 11;          // in-bucket passes: at most 2^11 counters per digit
constexpr std::size_t kInsertionMax = 16;  // smaller (sub-)buckets: insertion sort
constexpr std::size_t kBucketBytes = 32 * 1024;  // radix buckets aim at this size (L1/L2)...
constexpr std::size_t kMaxBuckets = 2048;  // ... but the MSD scatter writes at most ~this many

// Per-thread counters of the in-bucket sorts, one array per recursion level.
struct BucketScratch {
  std::vector<std::vector<std::uint32_t>> counts;
  std::uint32_t* level(int depth, std::size_t size) {
    if (counts.size() <= static_cast<std::size_t>(depth)) counts.resize(depth + 1);
    if (counts[depth].size() < size) counts[depth].resize(size);
    return counts[depth].data();
  }
};

// Insertion sort of keys[0..m); cheap where the keys are nearly sorted.
template <class U>
void insertion_sort(U* keys, std::size_t m) {
  for (std::size_t i = 1; i < m; ++i) {
    const U u = keys[i];
    std::size_t j = i;
    for (; j > 0 && keys[j - 1] > u; --j) keys[j] = keys[j - 1];
    keys[j] = u;
  }
}

// LSD radix sort of a[0..m) by bits [low, low + 2 * bits) in two passes (b: scratch), both
// histograms from one sweep, passes whose digit is the same for every key skipped. With `out`,
// the last pass writes the float keys there (its lines prefetched first: scattered writes to
// lines not in cache would stall) and nullptr is returned; else where the result lies (a or b).
template <class T, class U>
U* lsd_two_digits(U* a, U* b, std::size_t m, int low, int bits, std::uint32_t* c, T* out) {
  if (out)
    for (std::size_t i = 0; i < m; i += 64 / sizeof(T)) __builtin_prefetch(out + i, 1);
  const std::size_t radix = std::size_t(1) << bits;
  const U mask = static_cast<U>(radix - 1);
  std::uint32_t* c0 = c;
  std::uint32_t* c1 = c + radix;
  std::fill(c, c + 2 * radix, 0);
  for (std::size_t i = 0; i < m; ++i) {
    ++c0[(a[i] >> low) & mask];
    ++c1[(a[i] >> (low + bits)) & mask];
  }
  const bool pass0 = c0[(a[0] >> low) & mask] != m;  // false: one digit for every key
  const bool pass1 = c1[(a[0] >> (low + bits)) & mask] != m;
  U* src = a;
  U* dst = b;
  for (int pass = 0; pass < 2; ++pass) {
    if (!(pass ? pass1 : pass0)) continue;
    std::uint32_t* cp = pass ? c1 : c0;
    const int shift = low + pass * bits;
    std::uint32_t sum = 0;
    for (std::size_t d = 0; d < radix; ++d) { const std::uint32_t k = cp[d]; cp[d] = sum; sum += k; }
    if (out && (pass == 1 || !pass1)) {
      for (std::size_t i = 0; i < m; ++i) store_key(out + cp[(src[i] >> shift) & mask]++, src[i]);
      return nullptr;
    }
    for (std::size_t i = 0; i < m; ++i) dst[cp[(src[i] >> shift) & mask]++] = src[i];
    std::swap(src, dst);
  }
  return src;
}

// Sorts the ordered images a[0..m) whose bits from `vary_bits` up are all equal (b[0..m):
// scratch). Two LSD passes sort by all varying bits where they are at most 2 * kMaxDigitBits
// (float32 buckets), else by the top 2 * (about log2(m) / 2 + 4) of them, which leaves few keys
// with equal top bits; such runs are then insertion-sorted, or sorted likewise by the lower
// bits when they hold more than kInsertionMax keys (many equal or close keys). Returns where
// the result lies (a or b), or nullptr where `out` was given and the float keys were written
// there.
template <class T, class U>
U* sort_bucket(U* a, U* b, std::size_t m, int vary_bits, BucketScratch& s, int depth, T* out) {
  if (m <= kInsertionMax) {
    insertion_sort(a, m);
    return a;
  }
  if (vary_bits == 0) return a;  // all keys equal
  const int want = std::min(kMaxDigitBits, (bit_width(m) + 7) / 2);
  const int span = vary_bits <= 2 * kMaxDigitBits ? vary_bits : 2 * want;
  const int bits = (span + 1) / 2;
  const int low = vary_bits - span;
  std::uint32_t* c = s.level(depth, std::size_t(2) << bits);
  if (low == 0) return lsd_two_digits(a, b, m, low, bits, c, out);
  U* r = lsd_two_digits(a, b, m, low, bits, c, static_cast<T*>(nullptr));
  U* other = r == a ? b : a;
  std::size_t run = 0;  // runs of keys equal in bits [low, ...): mostly single keys
  for (std::size_t j = 1; j <= m; ++j) {
    if (j < m && (r[j] >> low) == (r[j - 1] >> low)) continue;
    if (j - run > kInsertionMax) {
      const U* sorted = sort_bucket(r + run, other + run, j - run, low, s, depth + 1, static_cast<T*>(nullptr));
      if (sorted != r + run) std::memcpy(r + run, sorted, (j - run) * sizeof(U));
    } else if (j - run > 1) {
      insertion_sort(r + run, j - run);
    }
    if (out)  // the run is final: written out in the same sweep
      for (std::size_t i = run; i < j; ++i) store_key(out + i, r[i]);
    run = j;
  }
  return out ? nullptr : r;
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
void sort_radix(const T* in, std::size_t n, T* out) {
  using U = typename Bits<T>::U;
  static_assert(sizeof(U) == sizeof(T), "key and image differ in size");
  constexpr int key_bits = sizeof(U) * 8;
  if (n >= (std::size_t(1) << 32)) {  // 32-bit counters below
    sort_locality(in, n, out);
    return;
  }
  // MSD digit: the top `prefix_bits` bits of the ordered image, at most about n/8 bins. For
  // float32 12 bits up to ~4 M keys (histogram and bucket map stay in L1; the 20 bits left take
  // two in-bucket LSD passes anyway), up to 14 above (buckets would outgrow L2); 16 for float64
  // (finer buckets). Measured fastest on 0.1-20 M keys, 2 threads.
  const int prefix_cap = key_bits == 32 ? std::min(14, std::max(12, bit_width(n) - 9)) : 16;
  const int prefix_bits = std::min(prefix_cap, std::max(8, bit_width(n) - 3));
  const int shift = key_bits - prefix_bits;
  const std::size_t bins = std::size_t(1) << prefix_bits;
  const int threads = n >= kParallelMin ? omp_get_max_threads() : 1;
  // bucket size: cache-sized, at most kMaxBuckets of them, and >= 8 per thread (load balance)
  const std::size_t target = std::max<std::size_t>(
      std::min(kBucketBytes / sizeof(T), n / (8 * threads)), n / kMaxBuckets);

  std::vector<std::uint32_t> hist(bins * threads);
  std::vector<std::uint16_t> bucket_of(bins);  // bins <= 2^16, so buckets too
  // per bucket: start in the scratch, size, varying low bits; per (bucket, thread): offset
  std::vector<std::size_t> start, size;
  std::vector<std::uint32_t> pos;
  std::vector<int> vary;
  std::vector<std::uint32_t> order;
  std::size_t valid = 0;
  auto tmp = scratch<U>(n);

#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = omp_get_thread_num(), p = omp_get_num_threads();
    const std::size_t lo = n * t / p, hi = n * (t + 1) / p;
    // 1. one read sweep: histogram of the MSD digit (NaNs not counted)
    std::uint32_t* h = hist.data() + t * bins;
    for (std::size_t i = lo; i < hi; ++i) {
      const T x = in[i];
      if (x == x) ++h[ordered_image(x) >> shift];
    }
#pragma omp barrier
#pragma omp single
    {  // 2. consecutive bins merged into buckets of about `target` keys
      std::size_t run = 0, first = 0, last = 0;
      auto close = [&]() {
        if (size.empty()) return;
        size.back() = run;
        vary.push_back(shift + bit_width(first ^ last));
      };
      for (std::size_t b = 0; b < bins; ++b) {
        std::size_t c = 0;
        for (std::size_t q = 0; q < p; ++q) c += hist[q * bins + b];
        if (c == 0) { bucket_of[b] = size.empty() ? 0 : size.size() - 1; continue; }
        if (size.empty() || run + c > target) {
          close();
          size.push_back(0);
          pos.resize(pos.size() + p, 0);
          run = 0;
          first = b;
        }
        run += c;
        last = b;
        bucket_of[b] = size.size() - 1;
        for (std::size_t q = 0; q < p; ++q) pos[(size.size() - 1) * p + q] += hist[q * bins + b];
      }
      close();
      // offsets in (bucket, thread) order
      std::size_t sum = 0;
      for (std::size_t k = 0; k < size.size(); ++k) {
        start.push_back(sum);
        for (std::size_t q = 0; q < p; ++q) { const std::size_t c = pos[k * p + q]; pos[k * p + q] = sum; sum += c; }
      }
      valid = sum;
      order.resize(size.size());
      for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return size[a] > size[b]; });
    }
    // 3. MSD scatter of the ordered images (NaNs dropped) into the buckets
    {
      const std::size_t buckets = size.size();
      std::vector<std::uint32_t> mine(buckets);
      for (std::size_t k = 0; k < buckets; ++k) mine[k] = pos[k * p + t];
      U* dst = tmp.get();
      const std::uint16_t* map = bucket_of.data();
      for (std::size_t i = lo; i < hi; ++i) {
        const T x = in[i];
        if (x != x) continue;
        const U u = ordered_image(x);
        dst[mine[map[u >> shift]]++] = u;
      }
    }
#pragma omp barrier
    // 4. buckets, largest first, from a dynamic queue: sorted in cache, written to out
    {
      BucketScratch s;
      std::unique_ptr<U[]> buf;
      std::size_t capacity = 0;
#pragma omp for schedule(dynamic, 1) nowait
      for (std::size_t j = 0; j < order.size(); ++j) {
        const std::size_t k = order[j];
        if (size[k] > capacity) { capacity = size[k]; buf.reset(new U[capacity]); }
        T* o = out + start[k];
        const U* sorted = sort_bucket(tmp.get() + start[k], buf.get(), size[k], vary[k], s, 0, o);
        if (sorted)
          for (std::size_t i = 0; i < size[k]; ++i) store_key(o + i, sorted[i]);
      }
    }
  }
  std::fill(out + valid, out + n, std::numeric_limits<T>::quiet_NaN());
}

#ifdef NITRO_WITH_HWY
template <class T>
void sort_simd_sample(const T* in, std::size_t n, T* out) {
  static thread_local hwy::Sorter sorter;
  const std::size_t threads = n >= kParallelMin ? static_cast<std::size_t>(omp_get_max_threads()) : 1;
  // Splitters: evenly spaced order statistics of a strided sample of the (non-NaN) keys.
  const std::size_t buckets = std::min(kSampleBucketsPerThread * threads, kMaxSampleBuckets);
  const std::size_t sampled = std::min(kSampleKeys, n);  // none of an empty input
  std::vector<T> sample;
  sample.reserve(sampled);
  for (std::size_t k = 0; k < sampled; ++k) {
    const T x = in[k * (n / sampled)];
    if (x == x) sample.push_back(x);
  }
  std::sort(sample.begin(), sample.end());
  std::vector<T> split(buckets - 1, std::numeric_limits<T>::infinity());
  if (!sample.empty())
    for (std::size_t k = 0; k + 1 < buckets; ++k) split[k] = sample[(k + 1) * sample.size() / buckets];
  // +inf keys get a bucket of their own, not sorted (Highway 1.0's vqsort pads with the
  // largest finite value and can return it in place of +inf), and NaNs the last one.
  constexpr T inf = std::numeric_limits<T>::infinity();
  auto slot = [buckets](T x, std::size_t count) { return x == x ? (x == inf ? buckets : count) : buckets + 1; };
  const std::size_t slots = buckets + 2;
  auto ids = scratch<std::uint8_t>(n);  // each key's bucket, found once
  std::vector<std::size_t> offsets(slots * threads, 0), start(slots + 1, 0);
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = omp_get_thread_num(), p = omp_get_num_threads();
    const std::size_t lo = n * t / p, hi = n * (t + 1) / p;
    std::size_t* mine = offsets.data() + t * slots;
    // A key's bucket is how many splitters are <= it, counted for kBlock keys at a time:
    // compares the compiler turns into SIMD instructions.
    using Count = typename std::conditional<sizeof(T) == 4, std::int32_t, std::int64_t>::type;
    std::size_t i = lo;
    for (; i + kBlock <= hi; i += kBlock) {
      Count count[kBlock] = {};
      for (const T s : split)
        for (std::size_t j = 0; j < kBlock; ++j) count[j] += in[i + j] >= s;
      for (std::size_t j = 0; j < kBlock; ++j) {
        const std::size_t b = slot(in[i + j], count[j]);
        ids[i + j] = static_cast<std::uint8_t>(b);
        ++mine[b];
      }
    }
    for (; i < hi; ++i) {
      std::size_t count = 0;
      for (const T s : split) count += in[i] >= s;
      const std::size_t b = slot(in[i], count);
      ids[i] = static_cast<std::uint8_t>(b);
      ++mine[b];
    }
#pragma omp barrier
#pragma omp single
    {  // exclusive offsets in (bucket, thread) order
      std::size_t sum = 0;
      for (std::size_t b = 0; b < slots; ++b) {
        start[b] = sum;
        for (std::size_t q = 0; q < p; ++q) {
          const std::size_t c = offsets[q * slots + b];
          offsets[q * slots + b] = sum;
          sum += c;
        }
      }
      start[slots] = sum;
    }
    for (std::size_t i = lo; i < hi; ++i) out[mine[ids[i]]++] = in[i];
  }
  std::vector<std::size_t> order(buckets);
  for (std::size_t b = 0; b < buckets; ++b) order[b] = b;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return start[x + 1] - start[x] > start[y + 1] - start[y];
  });
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (std::size_t k = 0; k < buckets; ++k) {
    const std::size_t b = order[k];
    T* first = out + start[b];
    T* last = out + start[b + 1];
    sorter(first, start[b + 1] - start[b], hwy::SortAscending());
    // Highway 1.0.3 (Debian 12's) leaves some buckets of few distinct small keys out of order
    // (e.g. multiples of 1e-20: 7 of 20 calls on 100,000 keys); the keys are all there, so one
    // pass checks the order and std::sort repairs the rare bucket it misses.
    if (!std::is_sorted(first, last)) std::sort(first, last);
  }
  std::fill(out + start[buckets + 1], out + n, std::numeric_limits<T>::quiet_NaN());
}

template void sort_simd_sample<float>(const float*, std::size_t, float*);
template void sort_simd_sample<double>(const double*, std::size_t, double*);
#endif

template void sort_merge<float>(const float*, std::size_t, float*);
template void sort_merge<double>(const double*, std::size_t, double*);
template void sort_locality<float>(const float*, std::size_t, float*);
template void sort_locality<double>(const double*, std::size_t, double*);
template void sort_radix<float>(const float*, std::size_t, float*);
template void sort_radix<double>(const double*, std::size_t, double*);

}  // namespace nitro
