"""A check of a CSR matrix's index arrays before C++ reads them through raw pointers: a column
index outside the matrix or row pointers out of order would read past an array (or crash)."""
from __future__ import annotations

import numpy as np


def check_csr(indptr: np.ndarray, indices: np.ndarray, shape: tuple[int, int], who: str) -> None:
    """Raise ``ValueError`` naming ``who`` unless ``indptr`` has ``rows + 1`` non-decreasing
    entries from 0 to at most ``len(indices)`` and every used column index is in ``[0, cols)``."""
    rows, cols = shape
    if len(indptr) != rows + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] > len(indices):
        raise ValueError(f"{who}: malformed CSR matrix (row pointers indptr not 0, ..., nnz in order)")
    used = indices[:int(indptr[-1])]
    if used.size and not 0 <= used.min() <= used.max() < cols:
        raise ValueError(f"{who}: malformed CSR matrix (a column index outside [0, {cols}))")
