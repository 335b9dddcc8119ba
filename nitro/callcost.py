"""What a call will cost before it runs: an online ridge regression of its log run time.

Refining mode keeps its exploration inside a time budget (:class:`nitro.refine.Refiner`'s
``time_budget``): before an uncertain call runs extra variants, it needs an estimate of what
they will take. Run times of one computation grow with its input's size, roughly as a power of
it, so the logarithm of a time is close to linear in the signed logarithms of the features that
measure size (rows, nonzeros, pixels). The model learns that line from the calls refining mode
times (every candidate call), by ridge regression with the penalty chosen by generalised
cross-validation, from running sums (O(d²) memory), and predicts within the range of
log times it has seen: an input larger than any seen is expected to cost as much as the
largest, never an extrapolated multiple of it. Learning a call costs the calling thread a list
append: the features are transformed and the equations solved in batches, every ``REFRESH``
calls or an eighth of all calls so far when that is more, at most ``MAX_PENDING`` (a solve
takes about 60 µs, and a candidate call of refining mode on a small input about 5 µs, so
solving every 32 calls had made each candidate call 2 µs slower for ever; a line fitted to
hundreds of calls moves little with an eighth more).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

REFRESH = 32         # observations between two solves of the normal equations (and at 4, 8, 16) ...
GROWTH = 8           # ... or an eighth of all observations, once that is more ...
MAX_PENDING = 1024   # ... but at most this many (the batch waits in memory, ~150 bytes a call)
LAMBDAS = 10.0 ** np.arange(-6.0, 3.0)   # ridge penalties tried, relative to the features' mean variance


class CallCost:
    """Predicted seconds of a call from its ``d`` feature values (see the module docstring).
    ``add(values, seconds)`` learns one timed call, ``predict(values)`` estimates one; before
    any call is timed the estimate is 0 (nothing to go on: refining mode explores no call then).
    ``units``: each feature's unit before its logarithm (a size in millions is taken as the
    model takes it: :meth:`nitro.SelectorModel.input_units`), 1 by default."""

    def __init__(self, d: int, units: Sequence[float] | None = None):
        self.d = int(d)
        self._inv_unit = [1.0] * self.d if units is None else [1.0 / float(u) for u in units]
        if len(self._inv_unit) != self.d:
            raise ValueError(f"CallCost: {len(self._inv_unit)} units for {self.d} features")
        self._sz = np.zeros(self.d)
        self._zz = np.zeros((self.d, self.d))
        self._zy = np.zeros(self.d)
        self._yy = 0.0
        self._w: list[float] | None = None
        self._pending: list[tuple[Sequence[float], float]] = []   # (raw feature values, log seconds)
        self._sum = 0.0
        self.n = 0
        self.low, self.high = math.inf, -math.inf

    def _z(self, values: Sequence[float]) -> list[float]:
        """Signed logarithms of the features in their units (non-finite ones as 0) and the
        intercept's 1 (plain Python: a call has a handful of features, and this runs on the
        calling thread)."""
        return [math.copysign(math.log1p(abs(x)), x) if math.isfinite(x) else 0.0
                for x in (float(v) * s for v, s in zip(values, self._inv_unit))] + [1.0]

    def add(self, values: Sequence[float], seconds: float) -> None:
        """Learn that a call with these features took ``seconds`` (non-positive or non-finite
        times are ignored)."""
        if not (seconds > 0.0 and math.isfinite(seconds)):
            return
        y = math.log(seconds)
        self._pending.append((tuple(values), y))
        self._sum += y
        self.n += 1
        if y < self.low:
            self.low = y
        if y > self.high:
            self.high = y
        if len(self._pending) >= min(max(REFRESH, self.n // GROWTH), MAX_PENDING) or self.n in (4, 8, 16):
            self._solve()

    def _solve(self) -> None:
        """Ridge regression on the centred sufficient statistics, its penalty chosen by
        generalised cross-validation (no constant: few calls and many features need a strong
        one, many calls almost none)."""
        X = np.array([v for v, _ in self._pending], dtype=float).reshape(-1, self.d) * self._inv_unit
        Z = np.sign(X) * np.log1p(np.abs(X))
        Z[~np.isfinite(Z)] = 0.0                # non-finite features as 0, as _z takes them
        y = np.array([y for _, y in self._pending])
        self._pending.clear()
        self._sz += Z.sum(axis=0)
        self._zz += Z.T @ Z
        self._zy += Z.T @ y
        self._yy += float(y @ y)
        n = self.n
        mean_z, mean_y = self._sz / n, self._sum / n
        Cxx = self._zz - n * np.outer(mean_z, mean_z)
        Cxy = self._zy - n * mean_z * mean_y
        Cyy = self._yy - n * mean_y ** 2
        e, V = np.linalg.eigh(Cxx)
        e = np.clip(e, 0.0, None)
        c = V.T @ Cxy
        lam = max(float(e.sum()) / max(self.d, 1), 1e-12) * LAMBDAS      # all penalties at once
        shrink = e[:, None] + lam[None, :]
        rss = np.maximum(Cyy - np.sum((c ** 2)[:, None] * (shrink + lam[None, :]) / shrink ** 2, axis=0), 0.0)
        dof = np.sum(e[:, None] / shrink, axis=0) + 1.0
        gcv = np.where(dof < n, n * rss / np.maximum(n - dof, 1e-12) ** 2, np.inf)
        if not np.isfinite(gcv).any():
            self._w = None
            return
        w = V @ (c / (e + lam[int(np.argmin(gcv))]))
        self._w = w.tolist() + [mean_y - float(w @ mean_z)]

    def predict(self, values: Sequence[float]) -> float:
        """Expected seconds of a call with these features (see the class docstring)."""
        if self.n == 0:
            return 0.0
        y = self._sum / self.n if self._w is None else math.fsum(a * b for a, b in zip(self._z(values), self._w))
        return math.exp(min(max(y, self.low), self.high))
