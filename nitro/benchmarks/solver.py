"""Sparse linear solvers A x = b: six C++ variants ({CG, BiCGStab} x {Jacobi, block-Jacobi,
Neumann approximate inverse}), cheap matrix features, and a deterministic generator of
symmetric positive definite and symmetric indefinite training/test systems.

A variant returns x with ||b - A x|| / ||b|| <= ``TOL`` or raises :class:`ConvergenceError`
(maximum iterations, breakdown, NaN, indefiniteness met by CG, singular preconditioner):
nitro then records that variant as failed for the input. The argument tuple is ``(A, b)``
with ``A`` a square ``scipy.sparse`` matrix (CSR, float64 and int32 indices avoid a copy)
and ``b`` a float64 vector.
"""
from __future__ import annotations

import inspect
import os
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .. import _variants
from ..variant import CodeVariant, code_variant
from .csr import check_csr

_cpp = _variants.solver
VARIANT_NAMES = ["cg_jacobi", "cg_block_jacobi", "cg_neumann",
                 "bicgstab_jacobi", "bicgstab_block_jacobi", "bicgstab_neumann"]
BLOCK_SIZE = _cpp.BLOCK_SIZE
TOL = 1e-8
MAX_ITER = 2000
# The output check recomputes the residual in NumPy; allow for rounding differences.
RESIDUAL_SLACK = 1.05
SPD_KINDS = ["poisson2d", "poisson3d", "anisotropic", "random_spd", "banded", "block", "scaled"]
INDEFINITE_KINDS = ["helmholtz", "saddle"]
KINDS = SPD_KINDS + INDEFINITE_KINDS
MIN_ROWS, MAX_ROWS = 200, 8_000
# Nine kinds (two where CG fails) over a 40x size range: 48 training systems leave ~5 per kind,
# too few for the SVM to keep the indefinite ones apart (six re-measurements of the seed-0 set
# on a 2-core VM: 75-93% of the optimum with 48; 93-96% with 96, the first 48 being the same).
N_TRAIN = 96

_STATUS = {1: "maximum iterations reached", 2: "breakdown (division by zero in the recurrence)",
           3: "matrix or preconditioner not positive definite (CG needs SPD)",
           4: "NaN or infinity in the iterates",
           5: "preconditioner setup failed (zero diagonal entry or singular diagonal block)"}


class ConvergenceError(RuntimeError):
    """A solver variant did not reach the tolerance; no solution is returned."""


@dataclass(frozen=True)
class SolveResult:
    x: np.ndarray
    iterations: int
    relative_residual: float


# -- input validation ------------------------------------------------------------------------
def as_csr(A) -> sp.csr_matrix:
    """``A`` as a square CSR matrix with float64 values and int32 indices (no copy when it
    already is one); clear errors for anything else."""
    if not sp.issparse(A):
        raise TypeError(f"solver: A must be a scipy.sparse matrix, got {type(A).__name__}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"solver: A must be square, got shape {A.shape}")
    if A.shape[0] == 0:
        raise ValueError("solver: empty system (A is 0 x 0)")
    if np.issubdtype(A.dtype, np.complexfloating):
        raise TypeError("solver: complex matrices are not supported (need real float64)")
    if A.format != "csr":
        A = A.tocsr()
    check_csr(A.indptr, A.indices, A.shape, "solver")
    if A.nnz > np.iinfo(np.int32).max:
        raise ValueError(f"solver: {A.nnz} nonzeros do not fit int32 indices")
    if A.dtype != np.float64 or A.indices.dtype != np.int32 or A.indptr.dtype != np.int32:
        A = sp.csr_matrix((A.data.astype(np.float64, copy=False), A.indices.astype(np.int32),
                           A.indptr.astype(np.int32)), shape=A.shape)
    return A


def _as_rhs(b, n: int) -> np.ndarray:
    b = np.asarray(b)
    if b.shape != (n,):
        raise ValueError(f"solver: b must have shape ({n},) to match A, got {b.shape}")
    if np.iscomplexobj(b):
        raise TypeError("solver: complex right-hand sides are not supported")
    return np.ascontiguousarray(b, dtype=np.float64)


# -- variants -------------------------------------------------------------------------------------
def solve(A, b, variant: str = "cg_jacobi", tol: float = TOL, max_iter: int = MAX_ITER) -> SolveResult:
    """Solve ``A x = b`` with one variant to ``||b - A x|| / ||b|| <= tol``; raises
    :class:`ConvergenceError` when that is not reached."""
    if variant not in VARIANT_NAMES:
        raise ValueError(f"unknown solver variant {variant!r}; known: {VARIANT_NAMES}")
    if not (0.0 < tol < 1.0):
        raise ValueError(f"solver: tol must be in (0, 1), got {tol}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or not 1 <= max_iter < 2**31:
        raise ValueError(f"solver: max_iter must be a whole number in [1, 2**31), got {max_iter!r}")
    A = as_csr(A)
    b = _as_rhs(b, A.shape[0])
    x, status, iterations, relres = getattr(_cpp, variant)(A.indptr, A.indices, A.data, b, float(tol),
                                                           int(max_iter))
    if status != 0:
        raise ConvergenceError(f"{variant} did not converge to relative residual {tol:g}: {_STATUS[status]} "
                               f"after {iterations} iterations (relative residual {relres:.3g})")
    return SolveResult(x, int(iterations), float(relres))


def _wrap(name):
    def variant(A, b):
        return solve(A, b, name).x
    variant.__name__ = name
    variant.__doc__ = f"x with ||b - A x|| / ||b|| <= {TOL:g}, C++ variant {name}"
    return variant


VARIANTS = {name: _wrap(name) for name in VARIANT_NAMES}


def relative_residual(A, b, x) -> float:
    """``||b - A x|| / ||b||`` (0 when b = 0 and A x = 0)."""
    b = np.asarray(b, dtype=np.float64)
    r = np.linalg.norm(b - A @ np.asarray(x, dtype=np.float64))
    bnorm = np.linalg.norm(b)
    return float(r / bnorm) if bnorm > 0 else (0.0 if r == 0 else float("inf"))


def reference(A, b) -> np.ndarray:
    """The direct solution (``scipy.sparse.linalg.spsolve``); raises on a singular A."""
    A = as_csr(A)
    b = _as_rhs(b, A.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", spla.MatrixRankWarning)
        try:
            x = spla.spsolve(A.tocsc(), b)
        except spla.MatrixRankWarning:
            raise np.linalg.LinAlgError("solver reference: A is singular") from None
    return np.atleast_1d(x)


_RTOL = "rtol" if "rtol" in inspect.signature(spla.cg).parameters else "tol"  # scipy < 1.12: tol


def baseline(A, b) -> np.ndarray:
    """What a SciPy user would call: unpreconditioned ``cg``, and ``bicgstab`` when CG fails
    (A not positive definite), both to the same tolerance."""
    A = as_csr(A)
    b = _as_rhs(b, A.shape[0])
    for method in (spla.cg, spla.bicgstab):
        x, info = method(A, b, maxiter=MAX_ITER, **{_RTOL: TOL})
        if info == 0 and relative_residual(A, b, x) <= TOL * RESIDUAL_SLACK:
            return x
    raise ConvergenceError(f"scipy cg and bicgstab did not reach relative residual {TOL:g}")


# -- output check ------------------------------------------------------------------------------
@dataclass(frozen=True)
class LinearSystem:
    """What a solution is checked against: the system itself (a residual check), because an
    ill-conditioned A makes solutions that meet the tolerance differ from the exact one."""
    A: sp.csr_matrix
    b: np.ndarray
    tol: float = TOL


def residual_reference(A, b) -> LinearSystem:
    return LinearSystem(as_csr(A), _as_rhs(b, A.shape[0]))


def residual_check(result, system: LinearSystem) -> bool:
    """Accept ``result`` when it is a finite vector whose relative residual meets the tolerance."""
    x = np.asarray(result)
    if x.shape != system.b.shape or not np.all(np.isfinite(x)):
        return False
    return relative_residual(system.A, system.b, x) <= system.tol * RESIDUAL_SLACK


# -- input features (cheap: one pass over the nonzeros each) --------------------------------------
def nnz(A, b=None) -> float:
    return float(as_csr(A).nnz)


def rows(A, b=None) -> float:
    return float(as_csr(A).shape[0])


def trace(A, b=None) -> float:
    return float(as_csr(A).diagonal().sum())


def diag_avg(A, b=None) -> float:
    return float(as_csr(A).diagonal().mean())


def diag_var(A, b=None) -> float:
    return float(as_csr(A).diagonal().var())


def diag_dominance(A, b=None) -> float:
    """Fraction of rows with |a_ii| >= sum_{j != i} |a_ij| (weakly diagonally dominant)."""
    A = as_csr(A)
    absdiag = np.abs(A.diagonal())
    absrow = np.asarray(abs(A).sum(axis=1)).ravel()
    return float(np.mean(absdiag >= (absrow - absdiag) * (1 - 1e-12)))


def lower_bandwidth(A, b=None) -> float:
    """max(i - j) over the nonzeros a_ij below the diagonal (0 for upper triangular A)."""
    A = as_csr(A)
    row = np.repeat(np.arange(A.shape[0], dtype=np.int64), np.diff(A.indptr))
    return float(max(0, (row - A.indices).max(initial=0)))


def norm1(A, b=None) -> float:
    """max_j sum_i |a_ij| (the matrix 1-norm)."""
    return float(spla.norm(as_csr(A), 1))


FEATURES = {"NNZ": nnz, "Rows": rows, "Trace": trace, "DiagAvg": diag_avg, "DiagVar": diag_var,
            "DiagDominance": diag_dominance, "LBw": lower_bandwidth, "Norm1": norm1}


def make_code_variant(name: str = "solver") -> CodeVariant:
    """The solver code variant; outputs are checked by their residual, not against spsolve.
    The default, ``bicgstab_jacobi``, also solves the indefinite systems CG fails on, so a
    call whose chosen variant does not converge retries with it (``fallback_on``), as
    SciPy users retry ``cg`` with ``bicgstab``."""
    return code_variant(name, VARIANTS, FEATURES, default="bicgstab_jacobi",
                        reference=residual_reference, check=residual_check,
                        fallback_on=(ConvergenceError,))


# -- inputs -------------------------------------------------------------------------------------
def _lap1d(m: int) -> sp.csr_matrix:
    return sp.diags([-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], [-1, 0, 1], format="csr")


def _poisson2d(m: int) -> sp.csr_matrix:
    T, I = _lap1d(m), sp.identity(m, format="csr")
    return (sp.kron(I, T) + sp.kron(T, I)).tocsr()


def _poisson3d(m: int) -> sp.csr_matrix:
    T, I = _lap1d(m), sp.identity(m, format="csr")
    return (sp.kron(sp.kron(I, I), T) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(T, I), I)).tocsr()


def _sym_random(n: int, per_row: float, rng, scale=1.0) -> sp.csr_matrix:
    """Random symmetric sparse matrix with zero diagonal and ~per_row entries a row."""
    C = sp.random(n, n, density=min(1.0, per_row / (2 * n)), random_state=rng,
                  data_rvs=lambda k: rng.uniform(-scale, scale, k), format="csr")
    C = sp.triu(C, 1)
    return (C + C.T).tocsr()


def make_matrix(kind: str, n: int, rng: np.random.Generator) -> sp.csr_matrix:
    """One symmetric sparse matrix of about ``n`` rows of the given kind (SPD except for
    ``helmholtz`` and ``saddle``, which are symmetric indefinite and nonsingular)."""
    n = max(int(n), 8)
    if kind == "poisson2d":
        A = _poisson2d(max(2, round(np.sqrt(n))))
    elif kind == "poisson3d":
        A = _poisson3d(max(2, round(n ** (1 / 3))))
    elif kind == "anisotropic":
        m = max(2, round(np.sqrt(n)))
        T, I = _lap1d(m), sp.identity(m, format="csr")
        eps = 10 ** rng.uniform(-3, -1)
        weak, strong = (sp.kron(T, I), sp.kron(I, T)) if rng.random() < 0.5 else (sp.kron(I, T), sp.kron(T, I))
        A = (strong + eps * weak).tocsr()
    elif kind == "random_spd":
        # B B^T + alpha I: alpha from far below the average diagonal (hard) to above it.
        B = sp.random(n, n, density=3 / n, random_state=rng, data_rvs=rng.standard_normal, format="csr")
        A = (B @ B.T).tocsr()
        alpha = A.diagonal().mean() * 10 ** rng.uniform(-2.5, 0.5)
        A = (A + alpha * sp.identity(n)).tocsr()
    elif kind == "banded":
        w = int(rng.integers(2, 12))
        offs = [rng.uniform(-1, 1, n - k) for k in range(1, w + 1)]
        L = sp.diags(offs, [-k for k in range(1, w + 1)], shape=(n, n), format="csr")
        S = (L + L.T).tocsr()
        rowsum = np.asarray(abs(S).sum(axis=1)).ravel()
        A = (S + sp.diags(rowsum * rng.uniform(1.0, 2.0) + 1e-2)).tocsr()
    elif kind == "block":
        bs = int(rng.choice([4, 8, 16]))
        blocks = []
        for _ in range(max(1, n // bs)):
            G = rng.standard_normal((bs, bs))
            blocks.append(G @ G.T / bs + 0.1 * np.eye(bs))
        D = sp.block_diag(blocks, format="csr")
        C = _sym_random(D.shape[0], 2, rng, scale=rng.uniform(0.01, 0.5))
        A = (D + C + sp.diags(np.asarray(abs(C).sum(axis=1)).ravel())).tocsr()
    elif kind == "scaled":
        P = _poisson2d(max(2, round(np.sqrt(n))))
        s = rng.uniform(1, 3)
        d = sp.diags(10 ** rng.uniform(-s, s, P.shape[0]))
        A = (d @ P @ d).tocsr()
    elif kind == "helmholtz":
        # Shifted Laplacian P - sigma I, sigma halfway between two of the lowest eigenvalues.
        m = max(3, round(np.sqrt(n)))
        lam1 = 2 - 2 * np.cos(np.arange(1, m + 1) * np.pi / (m + 1))
        lam = np.unique(np.round(np.add.outer(lam1, lam1).ravel(), 12))
        k = int(rng.integers(0, min(8, lam.size - 1)))
        sigma = (lam[k] + lam[k + 1]) / 2
        A = (_poisson2d(m) - sigma * sp.identity(m * m)).tocsr()
    elif kind == "saddle":
        # [[K, B^T], [B, -c I]] with K SPD: symmetric quasi-definite, indefinite.
        m = max(2, round(np.sqrt(0.8 * n)))
        K = _poisson2d(m)
        n2 = max(1, K.shape[0] // 4)
        B = sp.random(n2, K.shape[0], density=min(1.0, 2 / K.shape[0]), random_state=rng,
                      data_rvs=rng.standard_normal, format="csr")
        c = 10 ** rng.uniform(-0.5, 1)
        A = sp.bmat([[K, B.T], [B, -c * sp.identity(n2)]], format="csr")
    else:
        raise ValueError(f"unknown matrix kind {kind!r}; known: {KINDS}")
    A.sum_duplicates()
    A.sort_indices()
    return as_csr(A)


def make_inputs(count: int, seed: int, min_rows: int = MIN_ROWS, max_rows: int = MAX_ROWS):
    """``count`` systems ``(A, b)``, rows log-uniform in [min_rows, max_rows], kinds in turn,
    b standard normal; returns ``(systems, ids)``. Deterministic for a seed."""
    if count < 0 or min_rows < 1 or max_rows < min_rows:
        raise ValueError("make_inputs: need count >= 0 and 1 <= min_rows <= max_rows")
    rng = np.random.default_rng(seed)
    systems, ids = [], []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        n = int(np.exp(rng.uniform(np.log(min_rows), np.log(max_rows))))
        A = make_matrix(kind, n, rng)
        systems.append((A, rng.standard_normal(A.shape[0])))
        ids.append(f"s{seed}-{i:04d}-{kind}-{A.shape[0]}")
    return systems, ids


def train_test_inputs(n_train: int = N_TRAIN, n_test: int = 48, seed: int = 0):
    """Disjoint training and test sets (different seeds; ids never coincide). The default
    training set is twice the other families' (see :data:`N_TRAIN`)."""
    return make_inputs(n_train, seed=2 * seed + 1), make_inputs(n_test, seed=2 * seed + 2)


# -- users' matrices ------------------------------------------------------------------------------
def read_matrix_market(path) -> sp.csr_matrix:
    """A square real sparse matrix from a Matrix Market file (``scipy.io.mmread``)."""
    import scipy.io
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"solver: no Matrix Market file at {path!r}")
    try:
        M = scipy.io.mmread(path)
    except Exception as exc:  # scipy raises ValueError/OSError/... for malformed files
        raise ValueError(f"solver: {path!r} is not a readable Matrix Market file: {exc}") from None
    if not sp.issparse(M):
        M = sp.csr_matrix(np.atleast_2d(M))
    try:
        return as_csr(M)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path!r}: {exc}") from None


def system_from_file(path, seed: int = 0):
    """``(A, b)`` for a Matrix Market matrix, with b standard normal from ``seed``."""
    A = read_matrix_market(path)
    return A, np.random.default_rng(seed).standard_normal(A.shape[0])
