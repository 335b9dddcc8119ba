"""In-place transposition of float64 matrices: four C++ variants after Catanzaro, Keller &
Garland (PPoPP 2014) — C2R, R2C and their skinny specialisations — the paper's features
M, N, RowMajor and CoPrime, and a deterministic generator of random shapes.

The algorithms work in place, yet every timing repetition and every variant must see the
same input. So an input is a :class:`TransposeInput`: the matrix and a scratch buffer of the
same size. A variant copies the matrix into the scratch buffer (the same copy, inside every
variant's time) and transposes the buffer in place; it returns ``matrix.T`` as an (N, M)
view of the buffer, valid until the next variant call on the same input.
"""
from __future__ import annotations

import hashlib
import math

import numpy as np

from .. import _variants
from ..variant import CodeVariant, code_variant

_cpp = _variants.transpose
VARIANT_NAMES = ["c2r", "r2c", "skinny_c2r", "skinny_r2c"]
KINDS = ["balanced", "wide", "tall"]
MIN_ELEMENTS = 10_000
DEFAULT_MAX_ELEMENTS = 4_000_000      # 32 MB: keeps exhaustive measurement of the defaults to ~1 minute
SKINNY_MAX = 32                       # the small dimension of wide and tall inputs is 2..SKINNY_MAX


class TransposeInput:
    """One transposition problem: an M x N float64 matrix (C- or Fortran-contiguous) and a
    scratch buffer of M * N values that the variants transpose in place."""

    def __init__(self, matrix):
        if not isinstance(matrix, np.ndarray):
            raise TypeError(f"transpose input must be a numpy array, got {type(matrix).__name__}")
        if not matrix.dtype.isnative and matrix.dtype.kind == "f":     # big-endian data: a native copy
            matrix = matrix.astype(matrix.dtype.newbyteorder("="))
        if matrix.dtype != np.float64:
            raise TypeError(f"transpose input must have dtype float64, got {matrix.dtype}")
        if matrix.ndim != 2:
            raise ValueError(f"transpose input must be 2-D, got shape {matrix.shape}")
        if not (matrix.flags.c_contiguous or matrix.flags.f_contiguous):
            matrix = np.ascontiguousarray(matrix)
        self.matrix = matrix
        self.scratch = np.empty(matrix.size, np.float64)

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape

    @property
    def row_major(self) -> bool:
        return bool(self.matrix.flags.c_contiguous)

    @property
    def input_id(self) -> str:
        """A content hash (used by the autotuner when no ids are given)."""
        h = hashlib.sha1(str((self.shape, self.row_major)).encode())
        h.update(self.matrix.ravel(order="K").view(np.uint8).data)
        return h.hexdigest()[:16]

    def __repr__(self):
        m, n = self.shape
        return f"TransposeInput({m}x{n}, {'row' if self.row_major else 'column'}-major)"


def _as_input(x) -> TransposeInput:
    return x if isinstance(x, TransposeInput) else TransposeInput(x)


def _wrap(name):
    fn = getattr(_cpp, name)

    def variant(x):
        """``x.T`` by in-place transposition of the scratch buffer (an ndarray is wrapped in a
        fresh TransposeInput)."""
        problem = _as_input(x)
        m, n = problem.shape
        np.copyto(problem.scratch, problem.matrix.ravel(order="K"))
        if problem.row_major:
            fn(problem.scratch, m, n)              # row-major M x N -> row-major N x M
            return problem.scratch.reshape(n, m)
        fn(problem.scratch, n, m)                  # the buffer is x.T row-major (N x M) -> x row-major
        return problem.scratch.reshape((n, m), order="F")
    variant.__name__ = name
    return variant


VARIANTS = {name: _wrap(name) for name in VARIANT_NAMES}


def reference(x) -> np.ndarray:
    return _as_input(x).matrix.T


def baseline(x) -> np.ndarray:
    """What a NumPy user would call: ``x.T.copy()`` (out of place)."""
    return _as_input(x).matrix.T.copy()


# -- input features (the paper's: M, N, RowMajor, CoPrime) ---------------------------------
def m_rows(x) -> float:
    return float(_as_input(x).shape[0])


def n_cols(x) -> float:
    return float(_as_input(x).shape[1])


def row_major(x) -> float:
    return float(_as_input(x).row_major)


def coprime(x) -> float:
    m, n = _as_input(x).shape
    return float(math.gcd(m, n) == 1)


FEATURES = {"M": m_rows, "N": n_cols, "RowMajor": row_major, "CoPrime": coprime}


def make_code_variant(name: str = "transpose") -> CodeVariant:
    return code_variant(name, VARIANTS, FEATURES, default="c2r", reference=reference)


# -- inputs --------------------------------------------------------------------------------
def make_shape(kind: str, elements: int, rng: np.random.Generator) -> tuple[int, int]:
    """An (M, N) of about ``elements`` values: ``balanced`` (aspect ratio log-uniform in
    [1/16, 16]), ``wide`` (M in 2..SKINNY_MAX) or ``tall`` (N in 2..SKINNY_MAX)."""
    if kind == "balanced":
        aspect = np.exp(rng.uniform(np.log(1 / 16), np.log(16)))
        m = max(1, int(round(np.sqrt(elements / aspect))))
        return m, max(1, elements // m)
    if kind in ("wide", "tall"):
        small = int(rng.integers(2, SKINNY_MAX + 1))
        large = max(1, elements // small)
        return (small, large) if kind == "wide" else (large, small)
    raise ValueError(f"unknown shape kind {kind!r}; known: {KINDS}")


def make_inputs(count: int, seed: int, min_elements: int = MIN_ELEMENTS,
                max_elements: int = DEFAULT_MAX_ELEMENTS):
    """``count`` TransposeInputs, sizes log-uniform in [min_elements, max_elements], shape
    kinds in turn, every fourth one column-major; returns ``(inputs, ids)``. Deterministic
    for a seed."""
    if count < 0 or min_elements < 1 or max_elements < min_elements:
        raise ValueError("make_inputs: need count >= 0 and 1 <= min_elements <= max_elements")
    rng = np.random.default_rng(seed)
    inputs, ids = [], []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        elements = int(np.exp(rng.uniform(np.log(min_elements), np.log(max_elements))))
        m, n = make_shape(kind, elements, rng)
        layout = "F" if i % 4 == 3 else "C"
        matrix = np.asarray(rng.standard_normal((m, n)), order=layout)
        inputs.append(TransposeInput(matrix))
        ids.append(f"s{seed}-{i:04d}-{kind}-{m}x{n}-{layout}")
    return inputs, ids


def train_test_inputs(n_train: int = 48, n_test: int = 48, seed: int = 0,
                      min_elements: int = MIN_ELEMENTS, max_elements: int = DEFAULT_MAX_ELEMENTS):
    """Disjoint training and test sets (different seeds; ids never coincide). Larger
    matrices by ``max_elements`` (the paper filled a GPU's memory)."""
    train = make_inputs(n_train, seed=2 * seed + 1, min_elements=min_elements, max_elements=max_elements)
    test = make_inputs(n_test, seed=2 * seed + 2, min_elements=min_elements, max_elements=max_elements)
    return train, test
