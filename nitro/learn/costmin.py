"""Vuduc et al.'s run-time decision rules that weigh how much slower a wrong choice is.

* :class:`CostMinSelector` — the cost-minimisation method (§4.2): one softmax weight per
  variant, ``w_v(x) ∝ exp(θ_v·φ(x) + θ_v0)``, fitted to minimise the expected run time
  ``Σ_inputs Σ_v w_v(x) · T(v, x)`` over the training set; the choice is the variant of the
  largest weight, which needs only one linear score per variant at run time.
* :class:`LeastSquaresSelector` — the regression method (§4.3): one least-squares model of
  each variant's run time; the choice is the variant of the smallest prediction.

``φ(x)`` is the standardised input (``log1p`` of heavy-tailed non-negative columns, as for
the SVM). Times enter as slow-downs ``T(v, x) / T_best(x)``, so that large inputs do not
outweigh small ones; a variant that failed on an input costs twice its slowest valid one.
The models export as the NumPy-evaluated ``"linear"`` kind of :class:`nitro.SelectorModel`.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import softmax
from sklearn.preprocessing import StandardScaler

from .base import TimeSelector, slowdown
from .preprocessing import LogHeavyTails


class _LinearSelector(TimeSelector):
    choose = "max"

    def _features(self, X, fit=False):
        if fit:
            self.log_ = LogHeavyTails(self.log_ratio).fit(X)
            self.scaler_ = StandardScaler().fit(self.log_.transform(X))
        return self.scaler_.transform(self.log_.transform(X))

    def decision_function(self, X):
        return self._features(self._check_X(X)) @ self.coef_ + self.intercept_

    def predict(self, X):
        s = self.decision_function(X)
        return s.argmax(axis=1) if self.choose == "max" else s.argmin(axis=1)

    def export(self):
        return "linear", {**self.log_.export(), "mean": self.scaler_.mean_.tolist(),
                          "scale": self.scaler_.scale_.tolist(), "coef": self.coef_.tolist(),
                          "intercept": self.intercept_.tolist(), "choose": self.choose}


def costs(times: np.ndarray) -> np.ndarray:
    """Slow-down of each variant over the input's best; failures cost twice the slowest valid."""
    s = slowdown(times)
    worst = np.where(np.isfinite(s), s, 0.0).max(axis=1, keepdims=True)
    return np.where(np.isfinite(s), s, 2.0 * worst)


class CostMinSelector(_LinearSelector):
    """Softmax weights minimising the expected slow-down (L2 penalty ``alpha`` on θ)."""

    choose = "max"

    def __init__(self, alpha: float = 1e-3, log_ratio: float = 100.0, max_iter: int = 500):
        self.alpha = alpha
        self.log_ratio = log_ratio
        self.max_iter = max_iter

    def fit(self, X, times):
        X, times = self._start_fit(X, times)
        Z = np.hstack([self._features(X, fit=True), np.ones((X.shape[0], 1))])
        C = costs(times)
        n, k = C.shape

        def objective(theta):
            T = theta.reshape(Z.shape[1], k)
            P = softmax(Z @ T, axis=1)
            expected = (P * C).sum(axis=1)
            reg = 0.5 * self.alpha * (T[:-1] ** 2).sum()
            G = Z.T @ (P * (C - expected[:, None])) / n
            G[:-1] += self.alpha * T[:-1]
            return expected.mean() + reg, G.ravel()

        res = minimize(objective, np.zeros(Z.shape[1] * k), jac=True, method="L-BFGS-B",
                       options={"maxiter": self.max_iter})
        T = res.x.reshape(Z.shape[1], k)
        self.coef_, self.intercept_ = T[:-1], T[-1]
        self.expected_slowdown_ = float(res.fun)
        return self


class LeastSquaresSelector(_LinearSelector):
    """Per-variant least squares of ``log T(v, x)`` on ``φ(x)`` (a power law in the raw
    sizes), ridge ``alpha`` for stability; failed inputs are left out of that variant's fit."""

    choose = "min"

    def __init__(self, alpha: float = 1e-6, log_ratio: float = 100.0):
        self.alpha = alpha
        self.log_ratio = log_ratio

    def fit(self, X, times):
        X, times = self._start_fit(X, times)
        Z = np.hstack([self._features(X, fit=True), np.ones((X.shape[0], 1))])
        d, k = Z.shape[1], times.shape[1]
        T = np.zeros((d, k))
        for v in range(k):
            ok = np.isfinite(times[:, v])
            if not ok.any():          # never valid: never chosen
                T[-1, v] = np.inf
                continue
            A = Z[ok]
            T[:, v] = np.linalg.solve(A.T @ A + self.alpha * np.eye(d), A.T @ np.log(times[ok, v]))
        T[-1] = np.where(np.isfinite(T[-1]), T[-1], np.finfo(float).max / 4)
        self.coef_, self.intercept_ = T[:-1], T[-1]
        return self
