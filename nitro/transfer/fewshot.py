"""Few-shot transfer: measure a handful of well-chosen inputs on the target and correct the
zero-shot model with them.

Choice: k-means over the (signed-log, standardised) input features of the training inputs,
and from each cluster the input nearest its centre: every region of the input space gets one
measurement, which is what a correction of a smooth model needs (random picks crowd where
inputs are dense). Correction: kernel ridge regression of the residual (measured fraction of
the optimum minus the zero-shot prediction) on the same input kernel, with λ chosen by
closed-form leave-one-out error, so that a few noisy points cannot drag the model far. The
corrected model is still one kernel expansion (the picked inputs become extra centres).
"""
from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans

from ..learn.kron import rbf

LAMBDAS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


def pick_inputs(X: np.ndarray, n: int, seed: int = 0) -> np.ndarray:
    """Row indices of ``n`` representative inputs of ``X`` (transformed input features)."""
    if n < 1:
        raise ValueError(f"a target budget must be at least 1 input, got {n}")
    n = min(n, len(X))
    km = KMeans(n_clusters=n, n_init=4, random_state=seed).fit(X)
    picked = []
    for c in range(n):
        members = np.flatnonzero(km.labels_ == c)
        d = ((X[members] - km.cluster_centers_[c]) ** 2).sum(axis=1)
        picked.append(int(members[d.argmin()]))
    return np.unique(picked)


def residual_fit(Xc: np.ndarray, residual: np.ndarray, gamma: float, lambdas=LAMBDAS) -> tuple[np.ndarray, float]:
    """Weights ``α`` (n, v) so that ``rbf(x, Xc) @ α`` approximates ``residual``; λ by
    leave-one-out error. Returns ``(α, λ)``."""
    K = rbf(Xc, Xc, gamma)
    best = None
    for lam in lambdas:
        inv = np.linalg.inv(K + lam * np.eye(len(Xc)))
        alpha = inv @ residual
        loo = alpha / np.diag(inv)[:, None]           # residual minus its LOO prediction
        err = float((loo ** 2).sum())
        if best is None or err < best[0]:
            best = (err, alpha, lam)
    return best[1], best[2]


def corrected_expansion(centers: np.ndarray, beta: np.ndarray, mu: np.ndarray, gamma: float,
                        Xc: np.ndarray, measured: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The zero-shot expansion (``centers``, ``beta``, ``mu``) corrected by the target's
    ``measured`` fractions of the optimum (n, v) at inputs ``Xc``: new centres and weights."""
    zero_shot = rbf(Xc, centers, gamma) @ beta + mu
    alpha, lam = residual_fit(Xc, measured - zero_shot, gamma)
    return np.vstack([centers, Xc]), np.vstack([beta, alpha]), lam
