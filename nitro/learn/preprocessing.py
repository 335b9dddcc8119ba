"""Feature transforms that make input sizes and counts learnable by distance-based models."""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data


HUGE = 1e150      # beyond it a value's square overflows a double, and a standard scaler with it


class LogHeavyTails(TransformerMixin, BaseEstimator):
    """``log1p`` of every non-negative column whose values span more than ``ratio``× (as
    sizes and counts usually do); other columns pass through unchanged.

    An RBF kernel measures Euclidean distance: on a raw size spanning 1 K–16 M every small
    input would look alike, which is why the decision is learnt per column from the data.
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
        return self

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False, copy=True)
        cols = self.log_mask_
        X[:, cols] = np.log1p(np.maximum(X[:, cols], 0.0))
        return X
