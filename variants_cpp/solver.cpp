#include "solver.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace nitro::solver {
namespace {

using Vec = std::vector<double>;
// Below this many rows the OpenMP fork/join costs more than the loop itself.
constexpr std::int64_t kParallelMin = 4096;
constexpr int kB = kSolverBlockSize;

bool finite(double v) { return std::isfinite(v); }

// y = A x
void spmv(const Csr& A, const double* x, double* y) {
  const std::int64_t n = A.n;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    double s = 0.0;
    for (std::int32_t k = A.indptr[i]; k < A.indptr[i + 1]; ++k) s += A.data[k] * x[A.indices[k]];
    y[i] = s;
  }
}

double dot(std::int64_t n, const double* a, const double* b) {
  double s = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : s) if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

double norm(std::int64_t n, const double* a) { return std::sqrt(dot(n, a, a)); }

// r = b - A x; returns ||r||
double residual(const Csr& A, const double* b, const double* x, double* r) {
  const std::int64_t n = A.n;
  double s = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : s) if (n >= kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    double ax = 0.0;
    for (std::int32_t k = A.indptr[i]; k < A.indptr[i + 1]; ++k) ax += A.data[k] * x[A.indices[k]];
    r[i] = b[i] - ax;
    s += r[i] * r[i];
  }
  return std::sqrt(s);
}

// The preconditioner M: set up once per solve, then z = M^-1 r per application.
class Precond {
 public:
  Precond(const Csr& A, Preconditioner kind) : A_(A), kind_(kind) {}

  bool setup() {
    if (kind_ == Preconditioner::BlockJacobi) return setup_blocks();
    inv_diag_.assign(A_.n, 0.0);
    bool ok = true;
#pragma omp parallel for schedule(static) reduction(&& : ok) if (A_.n >= kParallelMin)
    for (std::int64_t i = 0; i < A_.n; ++i) {
      double d = 0.0;
      for (std::int32_t k = A_.indptr[i]; k < A_.indptr[i + 1]; ++k)
        if (A_.indices[k] == i) d += A_.data[k];
      const bool good = d != 0.0 && finite(1.0 / d);
      inv_diag_[i] = good ? 1.0 / d : 0.0;
      ok = ok && good;
    }
    if (kind_ == Preconditioner::Neumann) {
      w_.resize(A_.n);
      t_.resize(A_.n);
    }
    return ok;
  }

  void apply(const double* r, double* z) {
    const std::int64_t n = A_.n;
    switch (kind_) {
      case Preconditioner::Jacobi:
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
        for (std::int64_t i = 0; i < n; ++i) z[i] = inv_diag_[i] * r[i];
        break;
      case Preconditioner::Neumann: {
        // z = (I + N + N^2) D^-1 r by Horner: w = D^-1 r; z = w; twice z = w + N z,
        // where N z = z - D^-1 A z.
        double* w = w_.data();
        double* t = t_.data();
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
        for (std::int64_t i = 0; i < n; ++i) z[i] = w[i] = inv_diag_[i] * r[i];
        for (int degree = 0; degree < 2; ++degree) {
          spmv(A_, z, t);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
          for (std::int64_t i = 0; i < n; ++i) z[i] = w[i] + z[i] - inv_diag_[i] * t[i];
        }
        break;
      }
      case Preconditioner::BlockJacobi:
        apply_blocks(r, z);
        break;
    }
  }

 private:
  // Dense diagonal blocks of kB consecutive rows (the last one may be smaller), LU-factored
  // in place with partial pivoting; a block whose pivot vanishes makes M singular.
  bool setup_blocks() {
    const std::int64_t n = A_.n;
    const std::int64_t nb = (n + kB - 1) / kB;
    lu_.assign(nb * kB * kB, 0.0);
    piv_.assign(nb * kB, 0);
    bool ok = true;
#pragma omp parallel for schedule(static) reduction(&& : ok) if (n >= kParallelMin)
    for (std::int64_t blk = 0; blk < nb; ++blk) {
      const std::int64_t r0 = blk * kB;
      const int m = static_cast<int>(std::min<std::int64_t>(kB, n - r0));
      double* a = lu_.data() + blk * kB * kB;  // row-major, leading dimension kB
      int* piv = piv_.data() + blk * kB;
      double scale = 0.0;
      for (int i = 0; i < m; ++i)
        for (std::int32_t k = A_.indptr[r0 + i]; k < A_.indptr[r0 + i + 1]; ++k) {
          const std::int64_t j = A_.indices[k] - r0;
          if (j >= 0 && j < m) {
            a[i * kB + j] += A_.data[k];
          }
        }
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j) scale = std::max(scale, std::abs(a[i * kB + j]));
      bool good = scale > 0.0 && finite(scale);
      for (int c = 0; c < m && good; ++c) {
        int p = c;
        for (int i = c + 1; i < m; ++i)
          if (std::abs(a[i * kB + c]) > std::abs(a[p * kB + c])) p = i;
        piv[c] = p;
        if (p != c)
          for (int j = 0; j < m; ++j) std::swap(a[c * kB + j], a[p * kB + j]);
        const double pivot = a[c * kB + c];
        if (!(std::abs(pivot) > 1e-14 * scale)) {
          good = false;
          break;
        }
        for (int i = c + 1; i < m; ++i) {
          const double l = a[i * kB + c] / pivot;
          a[i * kB + c] = l;
          for (int j = c + 1; j < m; ++j) a[i * kB + j] -= l * a[c * kB + j];
        }
      }
      ok = ok && good;
    }
    return ok;
  }

  void apply_blocks(const double* r, double* z) const {
    const std::int64_t n = A_.n;
    const std::int64_t nb = (n + kB - 1) / kB;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (std::int64_t blk = 0; blk < nb; ++blk) {
      const std::int64_t r0 = blk * kB;
      const int m = static_cast<int>(std::min<std::int64_t>(kB, n - r0));
      const double* a = lu_.data() + blk * kB * kB;
      const int* piv = piv_.data() + blk * kB;
      double y[kB];
      for (int i = 0; i < m; ++i) y[i] = r[r0 + i];
      for (int c = 0; c < m; ++c) std::swap(y[c], y[piv[c]]);
      for (int i = 1; i < m; ++i)
        for (int j = 0; j < i; ++j) y[i] -= a[i * kB + j] * y[j];
      for (int i = m - 1; i >= 0; --i) {
        for (int j = i + 1; j < m; ++j) y[i] -= a[i * kB + j] * y[j];
        y[i] /= a[i * kB + i];
      }
      for (int i = 0; i < m; ++i) z[r0 + i] = y[i];
    }
  }

  const Csr& A_;
  Preconditioner kind_;
  Vec inv_diag_, w_, t_, lu_;
  std::vector<int> piv_;
};

SolveInfo finish(const Csr& A, const double* b, double* x, Status status, std::int64_t it, double bnorm,
                 Vec& scratch) {
  return {status, it, residual(A, b, x, scratch.data()) / bnorm};
}

SolveInfo cg(const Csr& A, const double* b, double* x, Precond& M, double tol, std::int64_t max_iter,
             double bnorm) {
  const std::int64_t n = A.n;
  const double target = tol * bnorm;
  Vec r(b, b + n), z(n), p(n), q(n);
  M.apply(r.data(), z.data());
  double rz = dot(n, r.data(), z.data());
  p = z;
  std::int64_t it = 0;
  while (it < max_iter) {
    if (!finite(rz)) return finish(A, b, x, Status::NotFinite, it, bnorm, q);
    if (rz <= 0.0) return finish(A, b, x, Status::NotPositiveDefinite, it, bnorm, q);
    spmv(A, p.data(), q.data());
    const double pq = dot(n, p.data(), q.data());
    if (!finite(pq)) return finish(A, b, x, Status::NotFinite, it, bnorm, q);
    if (pq <= 0.0) return finish(A, b, x, Status::NotPositiveDefinite, it, bnorm, q);
    const double alpha = rz / pq;
    double rr = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : rr) if (n >= kParallelMin)
    for (std::int64_t i = 0; i < n; ++i) {
      x[i] += alpha * p[i];
      r[i] -= alpha * q[i];
      rr += r[i] * r[i];
    }
    ++it;
    if (!finite(rr)) return finish(A, b, x, Status::NotFinite, it, bnorm, q);
    if (std::sqrt(rr) <= target) {
      // The recurrence residual drifts from b - A x: confirm, or restart from the true one.
      const double true_norm = residual(A, b, x, r.data());
      if (true_norm <= target) return {Status::Converged, it, true_norm / bnorm};
      M.apply(r.data(), z.data());
      rz = dot(n, r.data(), z.data());
      p = z;
      continue;
    }
    M.apply(r.data(), z.data());
    const double rz_new = dot(n, r.data(), z.data());
    const double beta = rz_new / rz;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (std::int64_t i = 0; i < n; ++i) p[i] = z[i] + beta * p[i];
    rz = rz_new;
  }
  return finish(A, b, x, Status::MaxIterations, it, bnorm, q);
}

SolveInfo bicgstab(const Csr& A, const double* b, double* x, Precond& M, double tol, std::int64_t max_iter,
                   double bnorm) {
  const std::int64_t n = A.n;
  const double target = tol * bnorm;
  const double tiny = std::numeric_limits<double>::epsilon() * std::numeric_limits<double>::epsilon();
  Vec r(b, b + n), rhat(r), p(n, 0.0), v(n, 0.0), phat(n), s(n), shat(n), t(n);
  double rho = 1.0, alpha = 1.0, omega = 1.0;
  double rnorm = bnorm;
  bool fresh = true;  // rhat == r and p == v == 0: a breakdown now cannot be cured by a restart
  auto restart = [&]() {
    rhat = r;
    std::fill(p.begin(), p.end(), 0.0);
    std::fill(v.begin(), v.end(), 0.0);
    rho = alpha = omega = 1.0;
    fresh = true;
  };
  std::int64_t it = 0;
  while (it < max_iter) {
    const double rho_new = dot(n, rhat.data(), r.data());
    if (!finite(rho_new)) return finish(A, b, x, Status::NotFinite, it, bnorm, t);
    if (std::abs(rho_new) <= tiny * norm(n, rhat.data()) * rnorm) {
      if (fresh) return finish(A, b, x, Status::Breakdown, it, bnorm, t);
      restart();
      continue;
    }
    const double beta = (rho_new / rho) * (alpha / omega);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (std::int64_t i = 0; i < n; ++i) p[i] = r[i] + beta * (p[i] - omega * v[i]);
    M.apply(p.data(), phat.data());
    spmv(A, phat.data(), v.data());
    const double rv = dot(n, rhat.data(), v.data());
    if (!finite(rv)) return finish(A, b, x, Status::NotFinite, it, bnorm, t);
    if (rv == 0.0) {
      if (fresh) return finish(A, b, x, Status::Breakdown, it, bnorm, t);
      restart();
      continue;
    }
    fresh = false;
    alpha = rho_new / rv;
    double ss = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : ss) if (n >= kParallelMin)
    for (std::int64_t i = 0; i < n; ++i) {
      s[i] = r[i] - alpha * v[i];
      ss += s[i] * s[i];
    }
    ++it;
    if (!finite(ss)) return finish(A, b, x, Status::NotFinite, it, bnorm, t);
    if (std::sqrt(ss) <= target) {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
      for (std::int64_t i = 0; i < n; ++i) x[i] += alpha * phat[i];
      rnorm = residual(A, b, x, r.data());
      if (rnorm <= target) return {Status::Converged, it, rnorm / bnorm};
      restart();
      continue;
    }
    M.apply(s.data(), shat.data());
    spmv(A, shat.data(), t.data());
    const double tt = dot(n, t.data(), t.data());
    const double ts = dot(n, t.data(), s.data());
    if (!finite(tt) || !finite(ts)) return finish(A, b, x, Status::NotFinite, it, bnorm, t);
    if (tt == 0.0) return finish(A, b, x, Status::Breakdown, it, bnorm, t);
    omega = ts / tt;
    double rr = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : rr) if (n >= kParallelMin)
    for (std::int64_t i = 0; i < n; ++i) {
      x[i] += alpha * phat[i] + omega * shat[i];
      r[i] = s[i] - omega * t[i];
      rr += r[i] * r[i];
    }
    rnorm = std::sqrt(rr);
    if (!finite(rnorm)) return finish(A, b, x, Status::NotFinite, it, bnorm, t);
    if (rnorm <= target) {
      rnorm = residual(A, b, x, r.data());
      if (rnorm <= target) return {Status::Converged, it, rnorm / bnorm};
      restart();
      continue;
    }
    if (omega == 0.0) {  // stagnation: the next beta would divide by zero
      restart();
      continue;
    }
    rho = rho_new;
  }
  return finish(A, b, x, Status::MaxIterations, it, bnorm, t);
}

}  // namespace

SolveInfo solve(const Csr& A, const double* b, double* x, Method method, Preconditioner precond,
                double tol, std::int64_t max_iter) {
  const std::int64_t n = A.n;
  std::fill(x, x + n, 0.0);
  const double bnorm = norm(n, b);
  if (!finite(bnorm)) return {Status::NotFinite, 0, std::numeric_limits<double>::quiet_NaN()};
  if (bnorm == 0.0) return {Status::Converged, 0, 0.0};  // x = 0 solves A x = 0 exactly
  Precond M(A, precond);
  if (!M.setup()) return {Status::PreconditionerFailed, 0, 1.0};
  return method == Method::CG ? cg(A, b, x, M, tol, max_iter, bnorm)
                              : bicgstab(A, b, x, M, tol, max_iter, bnorm);
}

}  // namespace nitro::solver
