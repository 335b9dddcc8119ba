"""Feature transforms that make input sizes and counts learnable by distance-based models."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data


HUGE = 1e150      # beyond it a value's square overflows a double, and a standard scaler with it


def input_units(X: np.ndarray) -> np.ndarray:
    """Per column of raw features ``X``, the unit it is taken in before a logarithm: 1, except
    for a column most of whose nonzero values lie below 1 in magnitude while spanning two decades
    or more (a count in millions, a density), where ``log1p`` would be nearly linear; that one is
    taken in units of its 5th percentile (of the nonzero magnitudes), so that it is compressed
    as counts are and a change of units changes no choice."""
    units = np.ones(X.shape[1])
    for j in range(X.shape[1]):
        a = np.abs(X[:, j][np.isfinite(X[:, j]) & (X[:, j] != 0)])
        if len(a) >= 10:
            low, high = np.percentile(a, [5, 95])
            if np.median(a) < 1 and high > 100 * low:
                units[j] = low
    return units


class LogHeavyTails(TransformerMixin, BaseEstimator):
    """``log1p(x / unit)`` of every non-negative column whose values span more than ``ratio``×
    (as sizes and counts usually do); other columns pass through unchanged. ``unit_`` is 1 but
    for a logged column mostly below 1 (:func:`input_units`).

    An RBF kernel measures Euclidean distance: on a raw size spanning 1 K–16 M every small
    input would look alike, which is why the decision is learnt per column from the data; and
    ``log1p`` is nearly linear below 1, so the same size in millions needs a unit of its own.
    """

    def __init__(self, ratio: float = 100.0):
        self.ratio = ratio

    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=np.float64)
        nonneg = (X >= 0).all(axis=0)
        lo = np.where(X > 0, X, np.inf).min(axis=0)
        hi = X.max(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            spread = np.where(np.isfinite(lo) & (lo > 0), hi / lo, 1.0)
        # a column beyond HUGE is logged however narrow its spread: its square overflows a scaler
        self.log_mask_ = nonneg & ((spread > self.ratio) | (hi > HUGE))
        huge = ~self.log_mask_ & (np.abs(X).max(axis=0, initial=0.0) > HUGE)
        if huge.any():
            j = int(np.flatnonzero(huge)[0])
            raise ValueError(f"input feature column {j} has values as large as {np.abs(X[:, j]).max():.3g} and "
                             f"negative ones: too large to standardise (|x| <= {HUGE:g}); rescale it")
        self.unit_ = np.where(self.log_mask_, input_units(X), 1.0)
        return self

    def export(self) -> dict:
        """The exported models' parameters of this transform: ``log_mask``, and ``unit`` when a
        logged column has one (absent otherwise, as models from before units were)."""
        check_is_fitted(self)
        units = {"unit": self.unit_.tolist()} if (self.unit_ != 1.0).any() else {}
        return {"log_mask": self.log_mask_.tolist(), **units}

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False, copy=True)
        cols = self.log_mask_
        X[:, cols] = np.log1p(np.maximum(X[:, cols] / self.unit_[cols], 0.0))
        return X
