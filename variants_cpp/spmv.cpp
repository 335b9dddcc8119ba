#include "spmv.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace nitro {
namespace {

// Rows handled together by the ELL and DIA kernels: their partial sums stay in L1.
constexpr std::int64_t kRowBlock = 256;
// Work items (rows + stored entries) per thread below which another thread does not pay:
// every variant engages at most work / kGrain threads, so tiny matrices run on one.
constexpr std::int64_t kGrain = 4096;

int threads_for(std::int64_t work) {
  return static_cast<int>(std::clamp<std::int64_t>(work / kGrain, 1, omp_get_max_threads()));
}

inline double row_dot(const std::int32_t* indices, const double* data, const double* x,
                      std::int64_t begin, std::int64_t end) {
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t k = begin; k < end; ++k) sum += data[k] * x[indices[k]];
  return sum;
}

// Merge-path search (Merrill & Garland 2016): the split of `diagonal` work items into
// (rows completed, nonzeros consumed).
void merge_path_search(std::int64_t diagonal, const std::int32_t* row_ends, std::int64_t n_rows,
                       std::int64_t nnz, std::int64_t* row, std::int64_t* nz) {
  std::int64_t lo = std::max<std::int64_t>(diagonal - nnz, 0);
  std::int64_t hi = std::min(diagonal, n_rows);
  while (lo < hi) {
    const std::int64_t pivot = (lo + hi) / 2;
    if (row_ends[pivot] <= diagonal - pivot - 1)
      lo = pivot + 1;
    else
      hi = pivot;
  }
  *row = lo;
  *nz = diagonal - lo;
}

}  // namespace

void spmv_csr_scalar(std::int32_t n_rows, const std::int32_t* indptr, const std::int32_t* indices,
                     const double* data, const double* x, double* y) {
#pragma omp parallel for schedule(static) num_threads(threads_for(n_rows + indptr[n_rows]))
  for (std::int32_t i = 0; i < n_rows; ++i) {
    double sum = 0.0;
    for (std::int32_t k = indptr[i]; k < indptr[i + 1]; ++k) sum += data[k] * x[indices[k]];
    y[i] = sum;
  }
}

void spmv_csr_vector(std::int32_t n_rows, const std::int32_t* indptr, const std::int32_t* indices,
                     const double* data, const double* x, double* y) {
  const std::int64_t nnz = indptr[n_rows];
  const std::int64_t total = static_cast<std::int64_t>(n_rows) + nnz;
  const int nthreads = threads_for(total);
  // The row each thread leaves unfinished and its partial sum, added after all threads end.
  std::vector<std::int64_t> carry_row(nthreads, n_rows);
  std::vector<double> carry_sum(nthreads, 0.0);
  const std::int32_t* row_ends = indptr + 1;
#pragma omp parallel num_threads(nthreads)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    std::int64_t row, nz, row_end, nz_end;
    merge_path_search(total * t / T, row_ends, n_rows, nnz, &row, &nz);
    merge_path_search(total * (t + 1) / T, row_ends, n_rows, nnz, &row_end, &nz_end);
    for (; row < row_end; ++row) {
      y[row] = row_dot(indices, data, x, nz, row_ends[row]);
      nz = row_ends[row];
    }
    carry_row[t] = row_end;
    carry_sum[t] = row_dot(indices, data, x, nz, nz_end);
  }
  for (int t = 0; t < nthreads; ++t)
    if (carry_row[t] < n_rows) y[carry_row[t]] += carry_sum[t];
}

void spmv_ell(std::int32_t n_rows, std::int32_t width, const std::int32_t* indices,
              const double* data, const double* x, double* y) {
  const std::int64_t n = n_rows;
#pragma omp parallel for schedule(static) num_threads(threads_for(n * (width + 1)))
  for (std::int64_t b = 0; b < n; b += kRowBlock) {
    const std::int64_t end = std::min(n, b + kRowBlock);
    double acc[kRowBlock] = {};
    for (std::int32_t k = 0; k < width; ++k) {
      const std::int32_t* col = indices + k * n;
      const double* val = data + k * n;
#pragma omp simd
      for (std::int64_t i = b; i < end; ++i) {
        const std::int32_t c = col[i];
        acc[i - b] += c >= 0 ? val[i] * x[c] : 0.0;
      }
    }
    std::copy(acc, acc + (end - b), y + b);
  }
}

namespace {
// Whether a DIA value is padding: +0.0, all 64 bits zero. The conversion holds a stored zero
// as -0.0 (spmv.hpp), which is not padding: it must still give NaN times an inf, as in CSR.
// (v == 0.0 cannot tell them apart; memcpy is the C++17 bit_cast, compiled to a compare.)
inline bool is_padding(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == 0;
}

// DIA rows [0, n_rows): the stored diagonals times x. With skip_padding the padding adds
// nothing, where 0 * inf would add a NaN that CSR, which stores no padding, does not have;
// that select costs about a third of the loop's time, so it runs only for an x that holds
// a value that is not finite (for a finite x, +0.0 * x adds nothing anyway).
template <bool skip_padding>
void dia_rows(std::int32_t n_rows, std::int32_t n_cols, std::int32_t n_diags, const std::int32_t* offsets,
              const double* data, const double* x, double* y) {
  const std::int64_t n = n_rows;
#pragma omp parallel for schedule(static) num_threads(threads_for(n * (n_diags + 1)))
  for (std::int64_t b = 0; b < n; b += kRowBlock) {
    const std::int64_t end = std::min(n, b + kRowBlock);
    double acc[kRowBlock] = {};
    for (std::int32_t d = 0; d < n_diags; ++d) {
      const std::int64_t off = offsets[d];
      const std::int64_t lo = std::max(b, -off);
      const std::int64_t hi = std::min(end, static_cast<std::int64_t>(n_cols) - off);
      const double* val = data + d * n;
#pragma omp simd
      for (std::int64_t i = lo; i < hi; ++i)
        acc[i - b] += skip_padding ? (is_padding(val[i]) ? 0.0 : val[i] * x[i + off]) : val[i] * x[i + off];
    }
    std::copy(acc, acc + (end - b), y + b);
  }
}
}  // namespace

void spmv_dia(std::int32_t n_rows, std::int32_t n_cols, std::int32_t n_diags,
              const std::int32_t* offsets, const double* data, const double* x, double* y) {
  bool finite = true;
#pragma omp parallel for simd reduction(&& : finite) num_threads(threads_for(n_cols))
  for (std::int32_t j = 0; j < n_cols; ++j) finite = finite && x[j] - x[j] == 0.0;   // NaN or inf: not 0
  if (finite)
    dia_rows<false>(n_rows, n_cols, n_diags, offsets, data, x, y);
  else
    dia_rows<true>(n_rows, n_cols, n_diags, offsets, data, x, y);
}

void spmv_coo(std::int32_t n_rows, std::int64_t nnz, const std::int32_t* rows,
              const std::int32_t* cols, const double* data, const double* x, double* y) {
#pragma omp parallel num_threads(threads_for(n_rows + nnz))
  {
#pragma omp for schedule(static)
    for (std::int32_t i = 0; i < n_rows; ++i) y[i] = 0.0;
    // (implicit barrier: y is zero before any thread adds to it)
    const std::int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    const std::int64_t begin = nnz * t / T, end = nnz * (t + 1) / T;
    if (begin < end) {
      const std::int32_t first = rows[begin], last = rows[end - 1];
      for (std::int64_t k = begin; k < end;) {
        const std::int32_t r = rows[k];
        double sum = 0.0;
        for (; k < end && rows[k] == r; ++k) sum += data[k] * x[cols[k]];
        if (r == first || r == last) {  // may be shared with a neighbouring thread
#pragma omp atomic
          y[r] += sum;
        } else {
          y[r] = sum;
        }
      }
    }
  }
}

}  // namespace nitro
