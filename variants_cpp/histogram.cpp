#include "histogram.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

namespace nitro {
namespace {

// Work is handed out in chunks of this many bytes by the dynamic queue.
constexpr std::size_t kChunk = 16384;

// The queue engages only as many threads as there are chunks (a single chunk runs on the
// calling thread, without starting a parallel region); an even share engages all.
int queue_threads(std::size_t n) {
  const std::size_t useful = (n + kChunk - 1) / kChunk;
  const int max_threads = omp_get_max_threads();
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(useful, max_threads)));
}

inline void atomic_add(std::uint64_t* target, std::uint64_t value) {
  __atomic_fetch_add(target, value, __ATOMIC_RELAXED);
}

// Sorts a copy of data[begin,end) and adds one count per run of equal values.
void sort_runs(const std::uint8_t* data, std::size_t begin, std::size_t end,
               std::vector<std::uint8_t>& scratch, std::uint64_t* bins) {
  if (begin >= end) return;
  scratch.assign(data + begin, data + end);
  std::sort(scratch.begin(), scratch.end());
  std::size_t run_start = 0;
  for (std::size_t i = 1; i <= scratch.size(); ++i) {
    if (i == scratch.size() || scratch[i] != scratch[run_start]) {
      atomic_add(&bins[scratch[run_start]], i - run_start);
      run_start = i;
    }
  }
}

void global_atomic_range(const std::uint8_t* data, std::size_t begin, std::size_t end,
                         std::uint64_t* bins) {
  for (std::size_t i = begin; i < end; ++i) atomic_add(&bins[data[i]], 1);
}

void private_range(const std::uint8_t* data, std::size_t begin, std::size_t end,
                   std::uint64_t* local) {
  for (std::size_t i = begin; i < end; ++i) ++local[data[i]];
}

void merge_private(const std::uint64_t* local, std::uint64_t* bins) {
  for (int b = 0; b < kHistogramBins; ++b)
    if (local[b]) atomic_add(&bins[b], local[b]);
}

// Runs body(begin, end) over an even, contiguous share of [0, n) for every thread.
template <class Body>
void even_share(std::size_t n, Body&& body) {
#pragma omp parallel
  {
    const std::size_t t = omp_get_thread_num(), T = omp_get_num_threads();
    body(n * t / T, n * (t + 1) / T);
  }
}

// Runs body(begin, end) over chunks claimed from a shared atomic work queue.
template <class Body>
void dynamic_queue(std::size_t n, Body&& body) {
  std::atomic<std::size_t> next{0};
  const int nthreads = queue_threads(n);
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
  {
    for (std::size_t begin = next.fetch_add(kChunk); begin < n; begin = next.fetch_add(kChunk))
      body(begin, std::min(n, begin + kChunk));
  }
}

void clear(std::uint64_t* bins) { std::memset(bins, 0, kHistogramBins * sizeof(std::uint64_t)); }

}  // namespace

void histogram_sort_even(const std::uint8_t* data, std::size_t n, std::uint64_t* bins) {
  clear(bins);
  even_share(n, [&](std::size_t b, std::size_t e) {
    std::vector<std::uint8_t> scratch;
    sort_runs(data, b, e, scratch, bins);
  });
}

void histogram_sort_dynamic(const std::uint8_t* data, std::size_t n, std::uint64_t* bins) {
  clear(bins);
  std::atomic<std::size_t> next{0};
  const int nthreads = queue_threads(n);
#pragma omp parallel num_threads(nthreads) if (nthreads > 1)
  {
    std::vector<std::uint8_t> scratch;
    for (std::size_t b = next.fetch_add(kChunk); b < n; b = next.fetch_add(kChunk))
      sort_runs(data, b, std::min(n, b + kChunk), scratch, bins);
  }
}

void histogram_global_atomic_even(const std::uint8_t* data, std::size_t n, std::uint64_t* bins) {
  clear(bins);
  even_share(n, [&](std::size_t b, std::size_t e) { global_atomic_range(data, b, e, bins); });
}

void histogram_global_atomic_dynamic(const std::uint8_t* data, std::size_t n,
                                     std::uint64_t* bins) {
  clear(bins);
  dynamic_queue(n, [&](std::size_t b, std::size_t e) { global_atomic_range(data, b, e, bins); });
}

void histogram_shared_atomic_even(const std::uint8_t* data, std::size_t n, std::uint64_t* bins) {
  clear(bins);
  even_share(n, [&](std::size_t b, std::size_t e) {
    std::uint64_t local[kHistogramBins] = {};
    private_range(data, b, e, local);
    merge_private(local, bins);
  });
}

void histogram_shared_atomic_dynamic(const std::uint8_t* data, std::size_t n,
                                     std::uint64_t* bins) {
  clear(bins);
  std::atomic<std::size_t> next{0};
  const int nthreads = queue_threads(n);
  if (nthreads == 1) {  // one chunk: the calling thread's counts are the result
    private_range(data, 0, n, bins);
    return;
  }
#pragma omp parallel num_threads(nthreads)
  {
    std::uint64_t local[kHistogramBins] = {};
    for (std::size_t b = next.fetch_add(kChunk); b < n; b = next.fetch_add(kChunk))
      private_range(data, b, std::min(n, b + kChunk), local);
    merge_private(local, bins);
  }
}

double histogram_subsample_std(const std::uint8_t* data, std::size_t n, std::size_t samples) {
  if (n == 0) return 0.0;
  const std::size_t step = std::max<std::size_t>(1, samples ? n / samples : n);
  const std::size_t count = (n - 1) / step + 1;  // the samples at 0, step, 2·step, ... below n
  // One pass with exact integer sums (values < 256), so the strided loads happen once; four
  // samples per iteration summed pairwise (integer sums: exact in any order), so that the
  // loop's bookkeeping is paid once per four independent loads.
  std::uint64_t sum = 0, sq = 0;
  std::size_t i = 0, left = count;
  for (; left >= 4; left -= 4, i += 4 * step) {
    const std::uint64_t a = data[i], b = data[i + step], c = data[i + 2 * step], d = data[i + 3 * step];
    sum += (a + b) + (c + d);
    sq += (a * a + b * b) + (c * c + d * d);
  }
  for (; left; --left, i += step) {
    const std::uint64_t v = data[i];
    sum += v;
    sq += v * v;
  }
  const double total = static_cast<double>(sum), total_sq = static_cast<double>(sq);
  const double c = static_cast<double>(count);
  const double var = (total_sq * c - total * total) / (c * c);
  return std::sqrt(std::max(var, 0.0));
}

}  // namespace nitro
