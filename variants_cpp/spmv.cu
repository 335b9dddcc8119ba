// CUDA SpMV variants (Bell & Garland's formats): CSR scalar, CSR vector, ELL, DIA.
// Layouts as in spmv.hpp; launchers take device pointers as integers so that Python
// (pycuda gpuarray.ptr) passes its arrays without a copy.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cuda_error.hpp"
#include "spmv.hpp"

namespace nitro::gpu {
namespace {

constexpr int kBlock = 256;
constexpr int kWarp = 32;

template <class T>
const T* cptr(std::uintptr_t p) { return reinterpret_cast<const T*>(p); }

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("nitro spmv_cuda.") + what + ": " + nitro::cuda_error_text(err));
}

void finish(const char* what) {
  check(cudaGetLastError(), what);
  check(cudaDeviceSynchronize(), what);
}

unsigned blocks_for(long long threads) {
  return static_cast<unsigned>((threads + kBlock - 1) / kBlock);
}

// One thread per row.
__global__ void csr_scalar_kernel(int n_rows, const int* __restrict__ indptr,
                                  const int* __restrict__ indices, const double* __restrict__ data,
                                  const double* __restrict__ x, double* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n_rows) return;
  double sum = 0.0;
  for (long long k = indptr[row]; k < indptr[row + 1]; ++k) sum += data[k] * x[indices[k]];
  y[row] = sum;
}

// One warp per row: the lanes read the row's nonzeros together (coalesced), then reduce.
__global__ void csr_vector_kernel(int n_rows, const int* __restrict__ indptr,
                                  const int* __restrict__ indices, const double* __restrict__ data,
                                  const double* __restrict__ x, double* __restrict__ y) {
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long row = thread / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= n_rows) return;  // whole warps leave together: blockDim is a multiple of 32
  double sum = 0.0;
  // 64-bit: k + kWarp would overflow int for a row ending near 2^31 nonzeros.
  for (long long k = static_cast<long long>(indptr[row]) + lane; k < indptr[row + 1]; k += kWarp)
    sum += data[k] * x[indices[k]];
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
}

// One thread per row; column-major slots make consecutive threads read consecutive words.
__global__ void ell_kernel(int n_rows, int width, const int* __restrict__ indices,
                           const double* __restrict__ data, const double* __restrict__ x,
                           double* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n_rows) return;
  double sum = 0.0;
  for (int k = 0; k < width; ++k) {
    const long long slot = static_cast<long long>(k) * n_rows + row;
    const int c = indices[slot];
    if (c >= 0) sum += data[slot] * x[c];
  }
  y[row] = sum;
}

// One thread per row, row-indexed diagonals (coalesced reads of data and x).
__global__ void dia_kernel(int n_rows, int n_cols, int n_diags, const int* __restrict__ offsets,
                           const double* __restrict__ data, const double* __restrict__ x,
                           double* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n_rows) return;
  double sum = 0.0;
  for (int d = 0; d < n_diags; ++d) {
    const long long col = static_cast<long long>(row) + offsets[d];
    if (col < 0 || col >= n_cols) continue;
    const double v = data[static_cast<long long>(d) * n_rows + row];
    // Padding is +0.0 (all bits zero) and adds nothing, where 0 * inf would add a NaN that CSR,
    // which stores no padding, does not have. A stored zero is held as -0.0 (spmv.hpp) and is
    // multiplied, giving NaN times an inf as in CSR: hence the integer test of the bits, as
    // v != 0.0 would skip it too.
    if (__double_as_longlong(v) != 0) sum += v * x[col];
  }
  y[row] = sum;
}

}  // namespace

void spmv_csr_scalar(std::int32_t n_rows, std::uintptr_t indptr, std::uintptr_t indices,
                     std::uintptr_t data, std::uintptr_t x, std::uintptr_t y) {
  if (n_rows <= 0) return;
  csr_scalar_kernel<<<blocks_for(n_rows), kBlock>>>(n_rows, cptr<int>(indptr), cptr<int>(indices),
                                                   cptr<double>(data), cptr<double>(x),
                                                   reinterpret_cast<double*>(y));
  finish("csr_scalar");
}

void spmv_csr_vector(std::int32_t n_rows, std::uintptr_t indptr, std::uintptr_t indices,
                     std::uintptr_t data, std::uintptr_t x, std::uintptr_t y) {
  if (n_rows <= 0) return;
  csr_vector_kernel<<<blocks_for(static_cast<long long>(n_rows) * kWarp), kBlock>>>(
      n_rows, cptr<int>(indptr), cptr<int>(indices), cptr<double>(data), cptr<double>(x),
      reinterpret_cast<double*>(y));
  finish("csr_vector");
}

void spmv_ell(std::int32_t n_rows, std::int32_t width, std::uintptr_t indices, std::uintptr_t data,
              std::uintptr_t x, std::uintptr_t y) {
  if (n_rows <= 0) return;
  ell_kernel<<<blocks_for(n_rows), kBlock>>>(n_rows, width, cptr<int>(indices), cptr<double>(data),
                                            cptr<double>(x), reinterpret_cast<double*>(y));
  finish("ell");
}

void spmv_dia(std::int32_t n_rows, std::int32_t n_cols, std::int32_t n_diags,
              std::uintptr_t offsets, std::uintptr_t data, std::uintptr_t x, std::uintptr_t y) {
  if (n_rows <= 0) return;
  dia_kernel<<<blocks_for(n_rows), kBlock>>>(n_rows, n_cols, n_diags, cptr<int>(offsets),
                                            cptr<double>(data), cptr<double>(x),
                                            reinterpret_cast<double*>(y));
  finish("dia");
}

}  // namespace nitro::gpu
