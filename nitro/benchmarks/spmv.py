"""Sparse matrix-vector product y = A x (double precision): five C++ storage-format variants,
the paper's five matrix features, a deterministic generator of structured matrices, and a
Matrix Market reader for users' own matrices.

Every call takes ``(A, x)`` with ``A`` an :class:`SpmvMatrix`: it holds the canonical CSR
matrix and converts it to ELL, DIA and COO on first use, then keeps the converted arrays.
So repeated calls, and the tuner's timed calls (after its untimed warm-up call), time the
kernel and not the conversion, as in a solver that multiplies by one matrix many times;
the one-off conversion cost is reported separately in :attr:`SpmvMatrix.conversion_seconds`.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from .. import _variants
from ..variant import CodeVariant, code_variant
from .csr import check_csr

_cpp = _variants.spmv
VARIANT_NAMES = ["csr_scalar", "csr_vector", "ell", "dia", "coo"]
KINDS = ["stencil_2d", "stencil_3d", "banded", "block_diagonal", "power_law", "uniform"]
MIN_NNZ, MAX_NNZ = 20_000, 600_000
INDEX_LIMIT = 2**31 - 1                 # int32 indices
MAX_FILLIN = 10.0                       # ELL/DIA constraint, see padded_format_ok
MAX_PADDED_ENTRIES = 2**26              # 512 MiB of values: no conversion stores more


class SpmvMatrix:
    """A sparse matrix prepared for the SpMV variants.

    ``matrix``: any SciPy sparse matrix/array or 2-D array of real numbers. It is copied
    into canonical CSR form (float64 values, int32 indices, sorted, duplicates summed);
    explicit zeros stay nonzeros, as in SciPy. Format conversions and features are computed
    once, on first use, and cached: the object must not be modified afterwards.
    """

    def __init__(self, matrix, name: str | None = None):
        if not sp.issparse(matrix):
            matrix = np.asarray(matrix)
            if matrix.ndim != 2:
                raise ValueError(f"SpMV needs a 2-D matrix, got an array of shape {matrix.shape}")
        dtype = np.dtype(matrix.dtype)
        if dtype.kind not in "biuf":
            raise TypeError(f"SpMV variants are real double precision; the matrix has dtype {dtype}")
        if sp.issparse(matrix) and matrix.format == "csr":      # read raw by scipy's own routines below
            check_csr(matrix.indptr, matrix.indices, matrix.shape, "SpMV")
        csr = sp.csr_matrix(matrix, dtype=np.float64, copy=True)
        if max(csr.shape) > INDEX_LIMIT or csr.nnz > INDEX_LIMIT:
            raise ValueError(f"matrix of shape {csr.shape} with {csr.nnz} nonzeros is too large "
                             "for int32 indices")
        csr.sum_duplicates()                 # also sorts the column indices of every row
        self.csr = csr
        self.name = name
        self.indptr = csr.indptr.astype(np.int32, copy=False)
        self.indices = csr.indices.astype(np.int32, copy=False)
        self.data = np.ascontiguousarray(csr.data)
        self.conversion_seconds: dict[str, float] = {}
        self._cache: dict[str, object] = {}

    @property
    def shape(self) -> tuple[int, int]:
        return self.csr.shape

    @property
    def nnz(self) -> int:
        return int(self.csr.nnz)

    def __repr__(self):
        label = f"{self.name!r}, " if self.name else ""
        return f"SpmvMatrix({label}shape={self.shape}, nnz={self.nnz})"

    @property
    def input_id(self) -> str:
        """Content hash (the tuner's default input id)."""
        if "input_id" not in self._cache:
            h = hashlib.sha1(repr(self.shape).encode())
            for a in (self.indptr, self.indices, self.data):
                h.update(a.view(np.uint8).data)
            self._cache["input_id"] = h.hexdigest()[:16]
        return self._cache["input_id"]

    # -- structure, computed once -------------------------------------------------------------
    @property
    def row_lengths(self) -> np.ndarray:
        if "row_lengths" not in self._cache:
            self._cache["row_lengths"] = np.diff(self.indptr)
        return self._cache["row_lengths"]

    def _rows(self) -> np.ndarray:
        """The row index of every nonzero (int32)."""
        if "rows" not in self._cache:
            self._cache["rows"] = np.repeat(np.arange(self.shape[0], dtype=np.int32), self.row_lengths)
        return self._cache["rows"]

    @property
    def n_diagonals(self) -> int:
        """Number of distinct diagonals (column - row) holding a nonzero."""
        if "n_diagonals" not in self._cache:
            offsets = self.indices.astype(np.int64) - self._rows() + (self.shape[0] - 1)
            self._cache["n_diagonals"] = int(np.count_nonzero(np.bincount(offsets))) if offsets.size else 0
        return self._cache["n_diagonals"]

    @property
    def stats(self) -> dict[str, float]:
        """The five input features (see :data:`FEATURES`), computed once."""
        if "stats" not in self._cache:
            n_rows, nnz = self.shape[0], self.nnz
            lengths = self.row_lengths
            mean = nnz / n_rows if n_rows else 0.0
            width = int(lengths.max()) if n_rows else 0
            self._cache["stats"] = {
                "AvgNZPerRow": float(mean),
                "RLSD": float(lengths.std()) if n_rows else 0.0,
                "MaxDeviation": float(width - mean),
                "DIA-Fillin": self.n_diagonals * n_rows / max(nnz, 1),
                "ELL-Fillin": width * n_rows / max(nnz, 1),
            }
        return self._cache["stats"]

    # -- format conversions, cached ---------------------------------------------------------
    def _converted(self, fmt: str, convert):
        if fmt not in self._cache:
            start = time.perf_counter()
            self._cache[fmt] = convert()
            self.conversion_seconds[fmt] = time.perf_counter() - start
        return self._cache[fmt]

    def _check_padded(self, fmt: str, entries: int):
        if entries > MAX_PADDED_ENTRIES:
            raise ValueError(f"{fmt} would store {entries} entries for {self.nnz} nonzeros "
                             f"(over the limit of {MAX_PADDED_ENTRIES}); use a CSR or COO variant")

    @property
    def ell(self) -> tuple[np.ndarray, np.ndarray]:
        """``(indices, data)``, both of shape (width, n_rows), column-major padded rows
        (padding: index -1, value 0)."""
        def convert():
            n_rows = self.shape[0]
            width = int(self.row_lengths.max()) if n_rows else 0
            self._check_padded("ELL", width * n_rows)
            rows = self._rows()
            slot = np.arange(self.nnz) - np.repeat(self.indptr[:-1], self.row_lengths)
            indices = np.full((width, n_rows), -1, dtype=np.int32)
            data = np.zeros((width, n_rows))
            indices[slot, rows] = self.indices
            data[slot, rows] = self.data
            return indices, data
        return self._converted("ell", convert)

    @property
    def dia(self) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, data)``: data[d, i] = A[i, i + offsets[d]], shape (n_diags, n_rows).

        Padding (a slot of a stored diagonal with no stored entry) is +0.0; a stored zero is
        held as -0.0, so that the kernels, which skip +0.0 by its bit pattern where ``x`` holds
        an inf or NaN, still multiply it and give NaN there as CSR does (0 * inf)."""
        def convert():
            n_rows = self.shape[0]
            self._check_padded("DIA", self.n_diagonals * n_rows)
            rows = self._rows()
            offsets, which = np.unique(self.indices.astype(np.int64) - rows, return_inverse=True)
            data = np.zeros((offsets.size, n_rows))
            data[which, rows] = np.where(self.data == 0.0, -0.0, self.data)   # +0.0 and -0.0 -> -0.0
            return offsets.astype(np.int32), data
        return self._converted("dia", convert)

    @property
    def coo(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, cols, data)`` sorted by row."""
        return self._converted("coo", lambda: (self._rows(), self.indices, self.data))

    def vector(self, x) -> np.ndarray:
        """``x`` as the contiguous float64 vector of length n_cols the variants read
        (no copy when it already is one)."""
        if (type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (self.csr.shape[1],)
                and x.flags.c_contiguous):
            return x                        # the common case, checked cheaply (dispatch path)
        x = np.asarray(x)
        if x.ndim != 1 or x.shape[0] != self.shape[1]:
            raise ValueError(f"x must be a vector of length {self.shape[1]} (the matrix's columns), "
                             f"got shape {x.shape}")
        if x.dtype.kind not in "biuf":
            raise TypeError(f"x must be real, got dtype {x.dtype}")
        return np.ascontiguousarray(x, dtype=np.float64)


def as_matrix(A) -> SpmvMatrix:
    """``A`` itself if it is an :class:`SpmvMatrix`, else a new one (whose conversions and
    features are then recomputed on every call: wrap a matrix once and reuse it)."""
    return A if isinstance(A, SpmvMatrix) else SpmvMatrix(A)


# -- variants ---------------------------------------------------------------------------------
def csr_scalar(A, x) -> np.ndarray:
    """CSR, a row per iteration, OpenMP static schedule (short, even rows)."""
    A = as_matrix(A)
    return _cpp.csr_scalar(A.indptr, A.indices, A.data, A.vector(x))


def csr_vector(A, x) -> np.ndarray:
    """CSR, merge-path split of rows + nonzeros over threads, SIMD dot products (long or
    uneven rows)."""
    A = as_matrix(A)
    return _cpp.csr_vector(A.indptr, A.indices, A.data, A.vector(x))


def ell(A, x) -> np.ndarray:
    """ELLPACK: rows padded to the longest, column-major (regular rows)."""
    A = as_matrix(A)
    indices, data = A.ell
    return _cpp.ell(indices, data, A.vector(x))


def dia(A, x) -> np.ndarray:
    """DIA: one padded array per occupied diagonal (banded and stencil matrices)."""
    A = as_matrix(A)
    offsets, data = A.dia
    return _cpp.dia(offsets, data, A.vector(x))


def coo(A, x) -> np.ndarray:
    """COO: even share of nonzeros per thread, segmented row sums (very uneven rows)."""
    A = as_matrix(A)
    rows, cols, data = A.coo
    return _cpp.coo(A.shape[0], rows, cols, data, A.vector(x))


VARIANTS = {name: globals()[name] for name in VARIANT_NAMES}


def reference(A, x) -> np.ndarray:
    """SciPy's CSR product of the canonical matrix."""
    A = as_matrix(A)
    return A.csr @ A.vector(x)


def baseline(A, x) -> np.ndarray:
    """What a SciPy user would call: ``A @ x`` on the CSR matrix (single-threaded)."""
    return as_matrix(A).csr @ x


# -- input features (the paper's; computed once per matrix and cached) -------------------------
def avg_nz_per_row(A, x=None) -> float:
    """Mean nonzeros per row."""
    return as_matrix(A).stats["AvgNZPerRow"]


def rlsd(A, x=None) -> float:
    """Row-length standard deviation."""
    return as_matrix(A).stats["RLSD"]


def max_deviation(A, x=None) -> float:
    """Longest row minus the mean row length."""
    return as_matrix(A).stats["MaxDeviation"]


def dia_fillin(A, x=None) -> float:
    """DIA storage / nonzeros: occupied diagonals × rows / nnz (1 = no padding)."""
    return as_matrix(A).stats["DIA-Fillin"]


def ell_fillin(A, x=None) -> float:
    """ELL storage / nonzeros: longest row × rows / nnz (1 = no padding)."""
    return as_matrix(A).stats["ELL-Fillin"]


FEATURES = {"AvgNZPerRow": avg_nz_per_row, "RLSD": rlsd, "MaxDeviation": max_deviation,
            "DIA-Fillin": dia_fillin, "ELL-Fillin": ell_fillin}


def padded_format_ok(fillin_feature: str, limit: float = MAX_FILLIN):
    """Constraint for a padded format (ELL, DIA): allowed while its fill-in is at most
    ``limit``. Padding costs memory and bandwidth in proportion to the fill-in: at 10x the
    padded copy is already 10x the matrix's values, and a power-law or random matrix can
    reach thousands (one long row pads every row), which would exhaust memory before the
    kernel runs. The bound is relative because constraints see only the features; the
    conversions also refuse more than ``MAX_PADDED_ENTRIES`` entries outright."""
    def valid_if(features) -> bool:
        return features[fillin_feature] <= limit
    valid_if.__name__ = f"{fillin_feature}<={limit:g}"
    return valid_if


CONSTRAINTS = [("ell", padded_format_ok("ELL-Fillin")), ("dia", padded_format_ok("DIA-Fillin"))]


def make_code_variant(name: str = "spmv") -> CodeVariant:
    return code_variant(name, VARIANTS, FEATURES, default="csr_vector", constraints=CONSTRAINTS,
                        reference=reference)


# -- inputs --------------------------------------------------------------------------------
def _from_coo(rows, cols, shape, rng) -> sp.csr_matrix:
    vals = rng.uniform(-1.0, 1.0, len(rows))
    return sp.csr_matrix((vals, (rows, cols)), shape=shape)


def _grid_side(nnz: int, per_row: int, dims: int) -> int:
    return max(2, round((nnz / per_row) ** (1 / dims)))


def make_matrix(kind: str, nnz: int, rng: np.random.Generator) -> sp.csr_matrix:
    """One matrix of the given kind with about ``nnz`` nonzeros."""
    if kind in ("stencil_2d", "stencil_3d"):
        dims = 2 if kind == "stencil_2d" else 3
        side = _grid_side(nnz, 2 * dims + 1, dims)
        line = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(side, side))
        eye = sp.identity(side)
        terms = []
        for axis in range(dims):
            factors = [line if a == axis else eye for a in range(dims)]
            term = factors[0]
            for f in factors[1:]:
                term = sp.kron(term, f)
            terms.append(term)
        A = sum(terms).tocsr()
        A.data = A.data * rng.uniform(0.5, 1.5, A.nnz)          # varied values, same pattern
        return A
    if kind == "banded":
        half = int(rng.integers(1, 40))
        density = rng.uniform(0.3, 1.0)
        n = max(2, round(nnz / ((2 * half + 1) * density)))
        offsets = np.arange(-half, half + 1)
        rows = np.repeat(np.arange(n), offsets.size)
        cols = rows + np.tile(offsets, n)
        keep = (cols >= 0) & (cols < n) & (rng.random(rows.size) < density)
        return _from_coo(rows[keep], cols[keep], (n, n), rng)
    if kind == "block_diagonal":
        block = int(rng.integers(4, 48))
        n_blocks = max(1, round(nnz / block**2))
        i, j = np.meshgrid(np.arange(block), np.arange(block), indexing="ij")
        starts = np.arange(n_blocks)[:, None] * block
        rows, cols = (starts + i.ravel()).ravel(), (starts + j.ravel()).ravel()
        n = n_blocks * block
        return _from_coo(rows, cols, (n, n), rng)
    if kind in ("power_law", "uniform"):
        mean = rng.uniform(3, 40)
        n_rows = max(1, round(nnz / mean))
        n_cols = n_rows if rng.random() < 0.7 else max(1, round(n_rows * rng.uniform(0.5, 2.0)))
        if kind == "power_law":             # Pareto row lengths: a few very long rows
            lengths = np.minimum(n_cols, np.ceil((rng.pareto(rng.uniform(1.1, 2.0), n_rows) + 1)
                                                 * mean / 3)).astype(np.int64)
        else:
            lengths = np.minimum(n_cols, rng.poisson(mean, n_rows))
        rows = np.repeat(np.arange(n_rows), lengths)
        cols = rng.integers(0, n_cols, rows.size)
        return _from_coo(rows, cols, (n_rows, n_cols), rng)
    raise ValueError(f"unknown matrix kind {kind!r}; known: {KINDS}")


def make_inputs(count: int, seed: int, min_nnz: int = MIN_NNZ, max_nnz: int = MAX_NNZ):
    """``count`` ``(A, x)`` inputs, nonzeros log-uniform in [min_nnz, max_nnz], kinds in turn;
    returns ``(args, ids)``. Deterministic for a seed."""
    if count < 0 or min_nnz < 1 or max_nnz < min_nnz:
        raise ValueError("make_inputs: need count >= 0 and 1 <= min_nnz <= max_nnz")
    rng = np.random.default_rng(seed)
    args, ids = [], []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        nnz = int(np.exp(rng.uniform(np.log(min_nnz), np.log(max_nnz))))
        iid = f"s{seed}-{i:04d}-{kind}"
        A = SpmvMatrix(make_matrix(kind, nnz, rng), name=iid)
        args.append((A, rng.standard_normal(A.shape[1])))
        ids.append(f"{iid}-{A.shape[0]}x{A.shape[1]}-{A.nnz}")
    return args, ids


def train_test_inputs(n_train: int = 48, n_test: int = 48, seed: int = 0):
    """Disjoint training and test sets (different seeds; ids never coincide)."""
    return make_inputs(n_train, seed=2 * seed + 1), make_inputs(n_test, seed=2 * seed + 2)


# -- users' matrices ---------------------------------------------------------------------------
def read_matrix_market(path) -> SpmvMatrix:
    """A Matrix Market file (``.mtx``, also gzipped) as an :class:`SpmvMatrix` named by its
    file name; a clear error when the file is missing, unreadable or complex."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Matrix Market file not found: {path}")
    try:
        matrix = scipy.io.mmread(path)
    except Exception as exc:  # scipy raises several types for malformed files
        raise ValueError(f"{path}: not a valid Matrix Market file ({type(exc).__name__}: {exc})") from None
    try:
        return SpmvMatrix(matrix, name=path.name)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None


def matrix_market_inputs(paths, seed: int = 0):
    """``(args, ids)`` for tuning on one's own matrices: each file with a random vector x
    (deterministic for a seed); ids are the file names."""
    paths = [Path(p) for p in paths]
    _check_unique_names(paths)
    rng = np.random.default_rng(seed)
    args, ids = [], []
    for p in paths:
        A = read_matrix_market(p)
        args.append((A, rng.standard_normal(A.shape[1])))
        ids.append(A.name)
    return args, ids


def _check_unique_names(paths: list[Path]) -> None:
    """Refuse, before any file is read, two paths with one file name (the input id): the error
    names that name and both paths, so that the user knows which file to rename."""
    seen: dict[str, Path] = {}
    for p in paths:
        if p.name in seen:
            raise ValueError(f"matrix_market_inputs: {str(seen[p.name])!r} and {str(p)!r} have the same file "
                             f"name {p.name!r}, which is the input id: rename one")
        seen[p.name] = p
