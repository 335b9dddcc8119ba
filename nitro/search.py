"""Measuring less than an exhaustive search: early stopping over variants and racing of
repetitions (Vuduc et al.), and active choice of training inputs (Nitro's incremental tuning).

Early stopping (Vuduc, Demmel & Bilmes, section 3): after measuring ``t`` of a input's ``N``
variants, rescale the observed speeds so that the best is 1 and estimate, from their empirical
distribution, the probability that ``t`` variants drawn without replacement would all be more
than ``epsilon`` slower than the best; stop when it is below ``alpha``. A raced variant stops
repeating as soon as the fastest of its first ``min_repeats`` (or more) samples is more than
``race`` slower than the best time so far: it cannot be the best, and its recorded time is
the fastest of the samples it got (:mod:`nitro.measurement`).
Variants are tried most often best first; every variant that has ever been best is always
measured, and the first inputs are measured in full (:meth:`EarlyStopping.for_input`).
Skipped variants are recorded with time ``None`` and the reason "skipped by early stopping":
fine for learners of the best variant (the default SVM), less so for learners that use every
variant's time (cost-aware and cross-device ones), which should get exhaustive rows.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

SKIPPED = "skipped by early stopping"
PLATEAU_QUALITY = 0.99   # a batch chosen this well (and learnt without change) shows a plateau
PLATEAU_INPUTS = 30      # inputs the plateau batches in a row must hold in all: none of 30 missed
#                          bounds the miss rate below 10% at 95% confidence (the rule of three)


@dataclass(frozen=True)
class EarlyStopping:
    """Tolerances of the training search (see module doc)."""

    epsilon: float = 0.05
    alpha: float = 0.1
    race: float = 0.2
    min_variants: int = 2
    exhaustive_inputs: int = 3

    def for_input(self, best_counts: dict[str, int], n_measured: int, n_variants: int) -> "EarlyStopping":
        """The tolerances for the next input: every variant while fewer than
        ``exhaustive_inputs`` inputs are measured, then at least every variant that was
        ever best (tried first, see :func:`prior_order`). Vuduc's rule assumes variants drawn
        at random; tried in order of past wins it would otherwise stop before a variant
        that wins rarely, and never learn that it wins."""
        ever_best = sum(1 for c in best_counts.values() if c > 0)
        floor = n_variants if n_measured < self.exhaustive_inputs else ever_best
        return replace(self, min_variants=max(self.min_variants, floor))

    def __post_init__(self):
        for name in ("epsilon", "alpha", "race"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise TypeError(f"invalid early-stopping tolerances: {name} is a number, got {value!r}")
        for name in ("min_variants", "exhaustive_inputs"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
                raise TypeError(f"invalid early-stopping tolerances: {name} is a whole number, got {value!r}")
        wrong = [f"{name} must be in (0, 1), got {getattr(self, name)!r}" for name in ("epsilon", "alpha")
                 if not 0 < getattr(self, name) < 1]
        wrong += [f"race must be positive, got {self.race!r}"] if not self.race > 0 else []
        wrong += [f"min_variants must be at least 1, got {self.min_variants!r}"] if self.min_variants < 1 else []
        wrong += ([f"exhaustive_inputs must be at least 0, got {self.exhaustive_inputs!r}"]
                  if self.exhaustive_inputs < 0 else [])
        if wrong:
            raise ValueError(f"invalid early-stopping tolerances: {'; '.join(wrong)}")

    def race_bound(self, best_time: float | None) -> float | None:
        """A variant whose fastest sample exceeds this stops repeating."""
        return None if best_time is None else best_time * (1.0 + self.race)

    def should_stop(self, times: list[float], n_total: int) -> bool:
        """Vuduc's rule (their equations 1-4) on the valid times measured so far."""
        t = len(times)
        if t >= n_total:
            return True
        if t < self.min_variants:
            return False
        speed = min(times) / np.asarray(times, dtype=float)
        n = n_total * float(np.mean(speed <= 1.0 - self.epsilon))   # estimated n(1 - ε)
        p = 1.0
        for r in range(1, t + 1):
            p *= 0.0 if n < r else (n - r + 1) / (n_total - r + 1)
        return p < self.alpha


def prior_order(variants: list[str], best_counts: dict[str, int], first: str | None = None) -> list[str]:
    """Variants most often best so far first (``first``, e.g. the reference variant, leads)."""
    rank = sorted(variants, key=lambda v: -best_counts.get(v, 0))
    if first is not None and first in rank:
        rank.remove(first)
        rank.insert(0, first)
    return rank


# -- active learning -----------------------------------------------------------------------------
def spread_indices(X: np.ndarray, k: int, start: int = 0) -> list[int]:
    """``k`` rows of ``X`` far apart (greedy farthest-point on signed-log, standardised
    features, each in its unit: :func:`nitro.learn.preprocessing.input_units`): a deterministic,
    diverse first batch before any model exists."""
    from .learn.kron import signed_log
    from .learn.preprocessing import input_units
    Z = signed_log(X / input_units(X))
    Z = (Z - Z.mean(0)) / np.where(Z.std(0) > 0, Z.std(0), 1.0)
    chosen = [start]
    d = ((Z - Z[start]) ** 2).sum(1)
    while len(chosen) < min(k, len(Z)):
        i = int(d.argmax())
        chosen.append(i)
        d = np.minimum(d, ((Z - Z[i]) ** 2).sum(1))
    return chosen


def margins(estimator, X: np.ndarray) -> np.ndarray:
    """Best-versus-second-best margin of a fitted selector's scores (small = the model is unsure
    which variant wins): a classifier's decision scores, a time learner's exported model's
    scores (:meth:`nitro.model.SelectorModel.scores`); zeros when it has fewer than two classes."""
    if len(getattr(estimator, "classes_", [])) < 2:
        return np.zeros(len(X))
    if hasattr(estimator, "decision_function"):
        scores = np.asarray(estimator.decision_function(X))
    else:                       # regression, tree, threshold: what the exported model scores
        from .model import SelectorModel
        names = [f"x{j}" for j in range(np.shape(X)[1])]
        scores = SelectorModel.from_estimator(estimator, names).scores(X)
    if scores.ndim == 1:
        return np.abs(scores)
    top2 = np.sort(scores, axis=1)[:, -2:]
    return top2[:, 1] - top2[:, 0]


def budget_count(budget: int | float, n: int) -> int:
    """Inputs to measure: an int is a count, a float in (0, 1] a fraction of ``n``."""
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Real):
        raise TypeError(f"budget must be a count or a fraction, got {budget!r}")
    budget = int(budget) if isinstance(budget, numbers.Integral) else float(budget)   # NumPy numbers too
    if isinstance(budget, float):
        if not 0 < budget <= 1:
            raise ValueError(f"a fractional budget must be in (0, 1], got {budget}")
        return max(1, math.ceil(budget * n))
    if budget < 1:
        raise ValueError(f"budget must be at least 1 input, got {budget}")
    return min(budget, n)
