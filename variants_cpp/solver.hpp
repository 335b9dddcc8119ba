// Iterative linear solvers for sparse A x = b (CSR, float64 values, int32 indices): six
// code variants = {CG, BiCGStab} x {Jacobi, block-Jacobi, approximate inverse}.
//
// - Jacobi: M^-1 = diag(A)^-1.
// - Block-Jacobi: M = the dense diagonal blocks of A over consecutive index ranges of
//   kSolverBlockSize rows, each LU-factored (partial pivoting) once per call.
// - Approximate inverse: the degree-2 truncated Neumann series of the Jacobi splitting,
//   M^-1 = (I + N + N^2) D^-1 with N = I - D^-1 A (a polynomial approximate inverse; it is
//   symmetric positive definite whenever A is symmetric with a positive diagonal, since
//   M^-1 is congruent to I + S + S^2 for symmetric S).
//
// Every solve starts from x = 0, stops when the *true* relative residual
// ||b - A x|| / ||b|| <= tol (recomputed explicitly whenever the recurrence says so), and
// reports a status instead of returning an unconverged x. The preconditioner setup is part
// of each call. Parallel with OpenMP.
#pragma once
#include <cstdint>

namespace nitro::solver {

constexpr int kSolverBlockSize = 8;

enum class Status : int {
  Converged = 0,
  MaxIterations = 1,      // the tolerance was not met within max_iter iterations
  Breakdown = 2,          // a division by (near) zero in the recurrence
  NotPositiveDefinite = 3,  // CG met p'Ap <= 0 or r'M^-1 r <= 0
  NotFinite = 4,          // NaN or infinity in the iterates
  PreconditionerFailed = 5,  // zero diagonal entry or singular diagonal block
};

struct Csr {
  std::int64_t n;             // rows == columns
  const std::int32_t* indptr;  // n + 1 offsets (int32: nnz < 2^31)
  const std::int32_t* indices;
  const double* data;
};

struct SolveInfo {
  Status status;
  std::int64_t iterations;
  double relative_residual;  // ||b - A x|| / ||b|| of the returned x (last iterate when not converged)
};

enum class Method : int { CG = 0, BiCGStab = 1 };
enum class Preconditioner : int { Jacobi = 0, BlockJacobi = 1, Neumann = 2 };

// Overwrites x[0..n) with the solution; b has n entries.
SolveInfo solve(const Csr& A, const double* b, double* x, Method method, Preconditioner precond,
                double tol, std::int64_t max_iter);

}  // namespace nitro::solver
