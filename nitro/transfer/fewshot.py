"""Few-shot transfer: measure a handful of well-chosen inputs on the target and correct the
zero-shot model with them.

Choice: k-means over the (signed-log, standardised) input features of the training inputs,
and from each cluster the input nearest its centre: every region of the input space gets one
measurement, which is what a correction of a smooth model needs (random picks crowd where
inputs are dense). Correction: kernel ridge regression of the residual (measured fraction of
the optimum minus the zero-shot prediction) on the same input kernel, with λ chosen by
closed-form leave-one-out error, so that a few noisy points cannot drag the model far. The
corrected model is still one kernel expansion (the picked inputs become extra centres).

:func:`refine_model` applies the same correction to an exported kernel model with whatever
target rows production calls timed (refining mode, :mod:`nitro.refine`), rows in which only
some variants ran.
"""
from __future__ import annotations

import numpy as np

from ..learn.budget import max_centres, reexpression_weights
from ..learn.kron import fraction_targets, pivoted_landmarks, rbf
from ..memo import content_key, recall
from ..model import SelectorModel

LAMBDAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
KMEANS_EXACT_MAX = 4000      # inputs up to which the picks come from full k-means
MAX_ROWS = 1000              # target rows a correction fits, the most recent (an n×n eigenproblem)
PICKS_KEPT = 32              # pick_inputs results kept within memo.kept (nitro evaluate: one per budget)


def pick_inputs(X: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """Row indices of ``n`` representative inputs of ``X`` (transformed input features): the
    input nearest each k-means centre; beyond ``KMEANS_EXACT_MAX`` rows, the k-means++ seeds
    themselves (inputs drawn with probability growing with their distance to those drawn).
    Kept within :func:`nitro.memo.kept`: ``nitro evaluate`` picks from the same inputs for every target."""
    if n < 1:
        raise ValueError(f"a target budget must be at least 1 input, got {n}")
    X = np.asarray(X)
    return recall("few_shot_picks", content_key(X, n, seed), lambda: _picks(X, n, seed), PICKS_KEPT)


def _picks(X: np.ndarray, n: int, seed: int) -> np.ndarray:
    from sklearn.cluster import KMeans, kmeans_plusplus
    n = min(n, len(X))
    if len(X) > KMEANS_EXACT_MAX:  # Lloyd's iterations cost n·k each: k-means++ seeding alone
        return np.unique(kmeans_plusplus(X, n, random_state=seed)[1])   # picks inputs, spread by D²
    km = KMeans(n_clusters=min(n, len(np.unique(X, axis=0))), n_init=4, random_state=seed).fit(X)  # k-means
    # finds no more clusters than distinct inputs (it would warn and leave some empty)
    d = ((X - km.cluster_centers_[km.labels_]) ** 2).sum(axis=1)
    order = np.lexsort((d, km.labels_))                  # by cluster, nearest to its centre first
    first = np.r_[True, km.labels_[order][1:] != km.labels_[order][:-1]]
    return np.unique(order[first])


def residual_fit(Xc: np.ndarray, residual: np.ndarray, gamma: float, lambdas=LAMBDAS) -> tuple[np.ndarray, float]:
    """Weights ``α`` (n, v) so that ``rbf(x, Xc) @ α`` approximates ``residual``; λ by
    leave-one-out error. Returns ``(α, λ)``. One eigendecomposition ``K = U S Uᵀ`` serves
    every λ: ``(K + λI)⁻¹ = U (S + λ)⁻¹ Uᵀ``, so refits with hundreds of rows stay cheap."""
    s, U = np.linalg.eigh(rbf(Xc, Xc, gamma))
    s = np.maximum(s, 0.0)
    UtR = U.T @ residual
    U2 = U * U
    best = None
    for lam in lambdas:
        alpha = U @ (UtR / (s + lam)[:, None])
        loo = alpha / (U2 @ (1.0 / (s + lam)))[:, None]   # residual minus its LOO prediction
        err = float((loo ** 2).sum())
        if best is None or err < best[0]:
            best = (err, alpha, lam)
    return best[1], best[2]


def refine_model(base: SelectorModel, feature_rows, times) -> SelectorModel:
    """``base`` (a ``kernel`` model, e.g. zero-shot from :func:`nitro.transfer.tune.tune_from_source`)
    corrected with target rows that time only some variants each.

    ``feature_rows`` (n, d): raw input features; ``times`` (n, len(base.variants)) seconds,
    NaN where a variant did not run and +inf where it ran and failed. The measured fraction of
    the optimum of a variant that ran is ``t_best_measured / t_v`` (0 for a failure); a variant
    that did not run keeps the base prediction (zero residual). Rows with fewer than two
    variants run say nothing about which is faster and are left out (so are rows where every
    variant that ran failed). The residual is fitted by kernel ridge regression
    (:func:`residual_fit`, λ by leave-one-out error) on the last ``MAX_ROWS`` rows, so the result
    is again one kernel expansion, with the rows as extra centres (re-expressed within the
    dispatch budget, :func:`within_budget`); always from ``base``, so that refitting with more
    rows never compounds earlier corrections."""
    if base.kind != "kernel":
        raise ValueError(f"refine_model corrects kernel models, not {base.kind!r} ones")
    X = np.atleast_2d(np.asarray(feature_rows, dtype=np.float64))
    T = np.atleast_2d(np.asarray(times, dtype=np.float64))
    k = len(base.variants)
    if X.shape != (T.shape[0], len(base.input_features)) or T.shape[1] != k:
        raise ValueError(f"refine_model: {X.shape} feature rows and {T.shape} times for a model of "
                         f"{len(base.input_features)} features and {k} variants")
    ran = ~np.isnan(T)
    keep = (ran.sum(axis=1) >= 2) & np.isfinite(T).any(axis=1)
    if not keep.any():
        raise ValueError("refine_model: no row has two or more variants run, one of them successfully")
    X, T, ran = X[keep][-MAX_ROWS:], T[keep][-MAX_ROWS:], ran[keep][-MAX_ROWS:]
    p = base.params
    gamma = float(p["gamma"])
    Xc = base.kernel_inputs(X)
    residual = np.where(ran, fraction_targets(np.where(ran, T, np.inf)) - base.scores(X), 0.0)
    alpha, lam = residual_fit(Xc, residual, gamma)
    centers, weights = within_budget(np.vstack([np.asarray(p["centers"]), Xc]),
                                     np.vstack([np.asarray(p["weights"]), alpha]), gamma)
    provenance = {**base.provenance, "refined": {"target_rows": int(len(X)), "lambda": lam}}
    return SelectorModel(variants=list(base.variants), input_features=list(base.input_features), kind="kernel",
                         params={**p, "centers": centers.tolist(), "weights": weights.tolist()},
                         device_features=dict(base.device_features), provenance=provenance)


def within_budget(centers: np.ndarray, weights: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """The expansion ``rbf(x, centers) @ weights`` re-expressed on at most the dispatch budget's
    centres (:func:`nitro.learn.budget.max_centres`; those a pivoted Cholesky decomposition
    picks), with the weights that reproduce it best on all the old centres; unchanged when it
    already fits. A corrected model gains a centre per target row: without this its dispatch
    time would grow with every refit."""
    m = max_centres(centers.shape[1])
    if len(centers) <= m:
        return centers, weights
    picked = pivoted_landmarks(centers, m, gamma)
    K = rbf(centers, centers[picked], gamma)
    F = rbf(centers, centers, gamma) @ weights
    W = reexpression_weights(K.T @ K, K.T @ F, rbf(centers[picked], centers[picked], gamma), len(centers))
    return centers[picked], W
