"""What every selector shares: the run-time protocol, fitting from a time matrix, and
Vuduc's accuracy metrics.

Two kinds of learner fit a selector:

* **label learners** (``fits_times = False``, e.g. :class:`~nitro.learn.SVMSelector`):
  ``fit(X, y)`` with ``y`` the index of each input's fastest variant;
* **time learners** (class attribute ``fits_times = True``): ``fit(X, times)`` with
  ``times`` an ``(n_inputs, n_variants)`` matrix of run times, NaN where a variant failed or
  was not allowed, so that they can weigh *how much* slower a wrong choice is. They expose
  ``predict(X)`` → variant index and ``export()`` → ``(kind, params)`` of a
  :class:`nitro.SelectorModel`.

:func:`fit_selector` fits either kind from a time matrix; :func:`nitro.tuner.Autotuner.fit_rows`
and the evaluation use it.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils.validation import check_array, has_fit_parameter


def times_matrix(X, times):
    """``(X, times)`` as every learner takes them: finite features and a float time matrix with
    one row per input, a failed run (NaN, infinite, zero or negative) as NaN, so that no learner
    takes a failure's 0 or -1 for the fastest time."""
    X = check_array(X, dtype=np.float64)
    times = np.array(times, dtype=np.float64, copy=True)
    if times.ndim != 2 or times.shape[0] != X.shape[0]:
        raise ValueError(f"times must be an (n_inputs, n_variants) matrix with {X.shape[0]} rows, "
                         f"got shape {times.shape}")
    times[~np.isfinite(times) | (times <= 0)] = np.nan
    return X, times


def check_times(X, times, min_variants: int = 1):
    """Validated ``(X, times)`` (:func:`times_matrix`) with at least ``min_variants`` variants and
    one valid time in every row."""
    X, times = times_matrix(X, times)
    if times.shape[1] < min_variants:
        raise ValueError(f"times has {times.shape[1]} variants, need at least {min_variants}")
    empty = np.isnan(times).all(axis=1)
    if empty.any():
        raise ValueError(f"{int(empty.sum())} input(s) have no valid variant time (row {int(np.flatnonzero(empty)[0])}); "
                         "drop them before fitting")
    return X, times


def best_index(times: np.ndarray) -> np.ndarray:
    """Index of the fastest valid variant of each row (rows must have one)."""
    return np.nanargmin(np.where(np.isfinite(times), times, np.inf), axis=1)


def slowdown(times: np.ndarray) -> np.ndarray:
    """``t_v / t_best`` per input and variant (inf where a variant failed)."""
    t = np.where(np.isfinite(times) & (times > 0), times, np.inf)
    return t / t.min(axis=1, keepdims=True)


class TimeSelector(BaseEstimator):
    """Base of time learners: sets ``fits_times`` and the index-valued ``classes_``."""

    fits_times = True

    def _start_fit(self, X, times, min_variants: int = 1):
        X, times = check_times(X, times, min_variants)
        self.n_features_in_ = X.shape[1]
        self.n_variants_ = times.shape[1]
        self.classes_ = np.arange(times.shape[1])
        return X, times

    def _check_X(self, X):
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(self, "n_variants_")
        X = check_array(X, dtype=np.float64)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the selector was fitted with {self.n_features_in_}")
        return X


def regret_weights(times: np.ndarray, floor: float = 0.01, cap: float = 1.0) -> np.ndarray:
    """Weight of each input for a label learner: how much slower its runner-up variant is
    (``t_second / t_best - 1``), kept within ``[floor, cap]`` and scaled to mean 1 (so that an
    SVM's C keeps its meaning). Where the two fastest variants tie, a wrong label costs
    nothing and their order is measurement noise; where the runner-up is twice as slow (or
    none is valid), a wrong label costs the most."""
    s = np.sort(slowdown(times), axis=1)
    runner_up = s[:, 1] if s.shape[1] > 1 else np.full(len(s), np.inf)
    w = np.clip(runner_up - 1.0, floor, cap)
    return w / w.mean()


def fit_selector(learner, X, times):
    """A fitted clone of ``learner`` from a time matrix: time learners get the times, label
    learners the index of each input's fastest variant (inputs without one are dropped; a
    failed run is NaN, or a zero or negative time, as for time learners),
    weighted by :func:`regret_weights` where the learner takes ``sample_weight``."""
    X, times = times_matrix(X, times)
    est = clone(learner)
    if getattr(est, "fits_times", False):
        return est.fit(X, times)
    ok = ~np.isnan(times).all(axis=1)
    if has_fit_parameter(est, "sample_weight"):
        return est.fit(X[ok], best_index(times[ok]), sample_weight=regret_weights(times[ok]))
    return est.fit(X[ok], best_index(times[ok]))


def predict_index(est, X) -> np.ndarray:
    """Variant indices chosen by a selector fitted with :func:`fit_selector`."""
    return np.asarray(est.predict(X)).astype(np.int64)


def delta_miss(times: np.ndarray, chosen: np.ndarray) -> float:
    """Vuduc's Δmiss: the fraction of inputs whose chosen variant is not the fastest."""
    return float((np.asarray(chosen) != best_index(times)).mean())


def delta_err(times: np.ndarray, chosen: np.ndarray) -> float:
    """Vuduc's Δerr: the mean slow-down ``T(chosen)/T(best) − 1`` (inf if a failed variant
    was chosen)."""
    s = slowdown(times)
    return float((s[np.arange(len(s)), np.asarray(chosen)] - 1.0).mean())


def tree_arrays(tree, value) -> dict:
    """A fitted scikit-learn ``tree_`` as plain lists: ``children_left``, ``children_right``
    (-1 at leaves), ``feature``, ``threshold`` (go left when ``x[feature] <= threshold``,
    ``x`` rounded to float32 first, as scikit-learn does) and ``value`` (given: one number
    or one vector per node)."""
    leaf = tree.children_left < 0
    return {"children_left": tree.children_left.tolist(), "children_right": tree.children_right.tolist(),
            "feature": np.where(leaf, -1, tree.feature).tolist(),
            "threshold": np.where(leaf, 0.0, tree.threshold).tolist(),
            "value": np.asarray(value, dtype=np.float64).tolist()}
