"""Kronecker kernel ridge regression over (input, device) pairs: the cross-device learner.

The kernel of two (input, device) pairs is ``k_x(x, x') · k_d(d, d')`` (RBF on standardised
input features times RBF on standardised device features), and the regression target of a
variant is its fraction of the optimum ``t_best / t_v`` — so a wrong choice costs what it
costs, not just a miss. When every source device has the same training inputs (a full grid),
the kernel matrix is ``K_d ⊗ K_x`` and one eigendecomposition of ``K_x`` serves every
device-feature subset and every choice of sources: a fit costs a tiny device eigenproblem and
one ``O(n²·v)`` product, which is what makes CV-DFS fast.
"""
from __future__ import annotations

import numpy as np


def rbf(A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d2, 0.0))


def signed_log(X: np.ndarray) -> np.ndarray:
    """``sign(x)·log1p(|x|)`` per element: sizes, counts and moments spanning orders of
    magnitude become comparable distances; the sign of skewness-like features is kept."""
    return np.sign(X) * np.log1p(np.abs(X))


def fraction_targets(times: np.ndarray) -> np.ndarray:
    """``t_best / t_v`` along the last axis (0 for failed variants)."""
    t = np.where(np.isfinite(times) & (times > 0), times, np.inf)
    return t.min(axis=-1, keepdims=True) / t


class KronKRRGrid:
    """Shared state for Kronecker KRR fits on a grid of ``n`` training inputs.

    ``X``: transformed, standardised training inputs (n, p); ``Y``: targets (n, m, v) of those
    inputs on all ``m`` devices that may serve as sources.
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray, gamma_x: float | None = None):
        self.X = X
        self.gamma_x = gamma_x if gamma_x is not None else 1.0 / max(X.shape[1], 1)
        ev, self.U = np.linalg.eigh(rbf(X, X, self.gamma_x))
        self.ev = np.maximum(ev, 0.0)
        self.Y = Y
        self.UtY = np.einsum("ni,nmc->imc", self.U, Y)
        self.Ut1 = self.U.sum(axis=0)

    def dual(self, sources: list[int], Kd: np.ndarray, kd: np.ndarray, lam: float):
        """Weights ``h`` (n, v) in the eigenbasis and the offset ``mu`` (v,) of the model for a
        device whose kernel values against ``sources`` are ``kd``."""
        sig, V = np.linalg.eigh(Kd)
        sig = np.maximum(sig, 0.0)
        mu = self.Y[:, sources].mean(axis=(0, 1))
        Z = self.UtY[:, sources, :] - self.Ut1[:, None, None] * mu[None, None, :]
        W = np.einsum("imc,mj->ijc", Z, V) / (self.ev[:, None, None] * sig[None, :, None] + lam)
        return np.einsum("ijc,j->ic", W, V.T @ kd), mu

    def predict_train(self, h, mu):
        return self.U @ (self.ev[:, None] * h) + mu

    def weights(self, h):
        """Expansion weights ``β`` so that ``f(x) = rbf(x, X) @ β + mu``."""
        return self.U @ h


def device_kernel(D: np.ndarray, sources: list[int], target: int, gamma: float | None = None):
    """RBF kernel among ``sources`` and of ``target`` against them, on device features
    standardised over the sources.

    Two rules keep a target that lies outside the sources from being extrapolated into
    nonsense: a feature constant over the sources is left out (the sources cannot show its
    effect, and its unit would set the target's distance), and the target's row is divided
    by its largest entry, so that its nearest sources keep their weight however far they are
    (an RBF row that vanishes would predict the sources' mean fraction, one constant choice
    for every input). A target farther from its nearest source than any source is from its own
    nearest is outside what the sources show: its row is flattened by the ratio of those
    squared distances, so that the farther out it lies, the more it gets the sources' pooled
    model rather than one source's."""
    Z = standardised_devices(D, sources)
    if Z is None:              # the sources cannot be told apart: equal weights
        return np.ones((len(sources), len(sources))), np.ones(len(sources))
    g = gamma if gamma is not None else 1.0 / Z.shape[1]
    d2, spread2 = source_distances(Z, sources, target)
    Kd = rbf(Z[sources], Z[sources], g)
    if d2.min() > spread2 > 0:   # outside the sources: flatten towards their pooled model
        g = g * spread2 / d2.min()
    return Kd, np.exp(-g * (d2 - d2.min()))


def standardised_devices(D: np.ndarray, sources: list[int]) -> np.ndarray | None:
    """All devices' features standardised over ``sources``, keeping those that vary over them
    (``None`` when none does)."""
    A = D[sources]
    mean, std = A.mean(axis=0), A.std(axis=0)
    varies = std > 1e-12 * np.maximum(np.abs(mean), 1.0)
    if not varies.any():
        return None
    return (D[:, varies] - mean[varies]) / std[varies]


def source_distances(Z: np.ndarray, sources: list[int], target: int) -> tuple[np.ndarray, float]:
    """Squared distances of ``target`` to each source, and the largest squared distance of a
    source to its own nearest (0 for a single source): beyond it, the target is outside."""
    d2 = ((Z[sources] - Z[target]) ** 2).sum(axis=1)
    among = ((Z[sources][:, None] - Z[sources][None]) ** 2).sum(axis=2)
    np.fill_diagonal(among, np.inf)
    return d2, float(among.min(axis=1).max()) if len(sources) > 1 else 0.0
