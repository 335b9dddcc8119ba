// Sparse matrix-vector product y = A x in double precision: code variants by storage format.
//
// Every function overwrites y[0..n_rows) and reads x at the column indices it is given (the
// caller guarantees 0 <= column < length of x). Indices are int32, as in the paper's SpMV
// study and in CUSP/cuSPARSE; nonzero counts are int64.
//
// Layouts:
//   CSR  indptr[n_rows + 1], indices[nnz], data[nnz]
//   ELL  indices[width][n_rows], data[width][n_rows]: column-major (slot k of row i at
//        k * n_rows + i), padding slots have index -1 and are skipped
//   DIA  offsets[n_diags], data[n_diags][n_rows]: row-indexed (data[d][i] = A[i, i + offsets[d]]),
//        padding holds +0.0 and a stored zero is held as -0.0: the kernels skip +0.0 (by its
//        bit pattern) so that padding adds nothing where x holds an inf or NaN, while a stored
//        zero gives NaN there, as in CSR (0 * inf)
//   COO  rows[nnz] (sorted ascending), cols[nnz], data[nnz]
#pragma once
#include <cstddef>
#include <cstdint>

namespace nitro {

// CPU variants (OpenMP). Each engages at most one thread per 4096 work items (rows plus
// stored entries), so that tiny matrices do not pay for waking threads.

// A row per iteration, static schedule: best for short, even rows.
void spmv_csr_scalar(std::int32_t n_rows, const std::int32_t* indptr, const std::int32_t* indices,
                     const double* data, const double* x, double* y);
// Merge-path: rows + nonzeros split evenly over threads, so a long row is shared by several
// threads; each row's dot product is a SIMD reduction. Best for long or uneven rows.
void spmv_csr_vector(std::int32_t n_rows, const std::int32_t* indptr, const std::int32_t* indices,
                     const double* data, const double* x, double* y);
void spmv_ell(std::int32_t n_rows, std::int32_t width, const std::int32_t* indices,
              const double* data, const double* x, double* y);
// n_cols bounds the columns i + offsets[d] that are read.
void spmv_dia(std::int32_t n_rows, std::int32_t n_cols, std::int32_t n_diags,
              const std::int32_t* offsets, const double* data, const double* x, double* y);
// Segmented sum over an even share of the nonzeros per thread; the rows shared between
// neighbouring threads are combined with atomic adds.
void spmv_coo(std::int32_t n_rows, std::int64_t nnz, const std::int32_t* rows,
              const std::int32_t* cols, const double* data, const double* x, double* y);

// CUDA variants (spmv.cu, built when nvcc is found). All pointers are device pointers;
// each launcher runs one kernel on the default stream, waits for it, and throws
// std::runtime_error on a CUDA error.
namespace gpu {
void spmv_csr_scalar(std::int32_t n_rows, std::uintptr_t indptr, std::uintptr_t indices,
                     std::uintptr_t data, std::uintptr_t x, std::uintptr_t y);
void spmv_csr_vector(std::int32_t n_rows, std::uintptr_t indptr, std::uintptr_t indices,
                     std::uintptr_t data, std::uintptr_t x, std::uintptr_t y);
void spmv_ell(std::int32_t n_rows, std::int32_t width, std::uintptr_t indices,
              std::uintptr_t data, std::uintptr_t x, std::uintptr_t y);
void spmv_dia(std::int32_t n_rows, std::int32_t n_cols, std::int32_t n_diags,
              std::uintptr_t offsets, std::uintptr_t data, std::uintptr_t x, std::uintptr_t y);
}  // namespace gpu

}  // namespace nitro
