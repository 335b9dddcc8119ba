"""Few-shot transfer by boosted trees: the sources' rows and a few of the target's, one model.

The rows ``[input ∘ device features]`` of every source and the handful of target inputs timed
on the target train one :class:`nitro.learn.RegressionSelector` with one booster per variant
(``per_variant``: each learns its variant's log slow-down from the input's best). The target's
rows are weighted so that together they count as much as one source's (weight
``n_source_inputs / n_target_inputs``): with 2% of the inputs timed, the target is one more
device among the sources, not a rounding error beside them. Trees split on the device features
where the target's rows disagree with its neighbours' and so learn target behaviour no source
shows, while inputs far from any target row keep the sources' answer.

Measured on the Ginkgo SpMV data (2% of the training inputs, k-means picks): 97.1% of the
optimum mean leave-one-GPU-out and 96.5% leave-one-family-out (one booster shared by all
variants, over ``[input ∘ device ∘ variant code]``: 96.9 and 96.3; the residual correction of
the kernel model, :mod:`nitro.transfer.fewshot`: 96.0 and 96.0).

Refining mode refits the same way (:class:`TreesRefit`) from rows that production calls timed,
each with only some variants: a row teaches only the variants it ran (a zero weight for the
others), and rows with fewer than two are left out.

Each source contributes at most ``MAX_SOURCE_INPUTS`` training inputs, and all of them together
at most ``MAX_SOURCE_ROWS`` rows (the same random sample of inputs on every source,
:func:`source_inputs`): the trees' fit then costs the same at 10⁵ inputs as at 10⁴ and does not
grow with the number of sources, and the target's rows, all kept, keep their weight of one source.
"""
from __future__ import annotations

import numpy as np

from ..learn.regression import RegressionSelector
from ..model import SelectorModel
from .data import TransferData, concatenate, stack_times

MAX_SOURCE_INPUTS = 4000
# Rows over all sources: a fit costs ~1.3 s + 0.06 s per 1,000 rows (one core, 5 variants). On a
# synthetic table of 12 devices x 10,000 inputs (11 sources; `benchmarks/README.md`, "Training at
# scale") 2,000 inputs per source instead of 4,000 moved few-shot quality by -0.04 / -0.13 / -0.06
# points at 1 / 2 / 5% (1,500: up to -0.19) and took 0.63x the time. The SpMV data (7 sources x
# 1,069 inputs) stays below it.
MAX_SOURCE_ROWS = 22_000
# Trees per variant and their step: 100 at 0.2 dispatch as fast as the 200 shared trees of one
# booster over all variants (~8 us on SpMV's 4 variants); 200 at 0.1 scored 0.0-0.3 points
# higher on the SpMV data but took 18 us.
MAX_ITER, LEARNING_RATE = 100, 0.2
# Refining mode's refits: 50 trees per variant at 0.3 dispatch in 3.4 us against 9.0 for 100 at
# 0.2 (SpMV, 4 variants) and refined to the same quality in the replay (97.5% of the optimum).
REFIT_MAX_ITER, REFIT_LEARNING_RATE = 50, 0.3


def fit_few_shot_trees(data: TransferData, sources: list[int], train: np.ndarray, target: int,
                       X_target: np.ndarray, target_times: np.ndarray, features: list[int],
                       random_state: int = 0, ran: np.ndarray | None = None, max_iter: int | None = None,
                       learning_rate: float | None = None) -> RegressionSelector:
    """Boosted trees on the ``sources``' ``train`` rows plus ``target_times`` (n, v) measured
    on the target at inputs of raw features ``X_target`` (n, d), over ``[input ∘ device
    features[features]]``. ``ran`` (n, v): which variants ran on each target row (default all,
    a NaN time is then a failure; refining mode times only some). Rows where fewer than two
    variants ran are left out: one time alone says nothing about which variant is faster.
    ``max_iter``, ``learning_rate``: trees per variant and their step (default ``MAX_ITER``,
    ``LEARNING_RATE``)."""
    train = source_inputs(train, len(sources), random_state)
    X, times = stack_times(data, sources, train, features)
    target_times = np.asarray(target_times, dtype=np.float64)
    ran = np.ones(target_times.shape, dtype=bool) if ran is None else np.asarray(ran, dtype=bool)
    if ran.shape != target_times.shape:
        raise ValueError(f"ran must match the target times' shape {target_times.shape}, got {ran.shape}")
    ok = np.isfinite(np.where(ran, target_times, np.nan)).any(axis=1) & (ran.sum(axis=1) >= 2)
    if not ok.any():
        raise ValueError("no target row has two or more variants run, one of them successfully")
    Xt = concatenate(np.asarray(X_target, dtype=np.float64)[ok], data.D[target, features])
    weight = len(X) / len(sources) / ok.sum()
    w = np.vstack([np.ones(times.shape), np.where(ran[ok], weight, 0.0)])
    est = RegressionSelector(per_variant=True, max_iter=max_iter or MAX_ITER,
                             learning_rate=learning_rate or LEARNING_RATE, random_state=random_state)
    return est.fit(np.vstack([X, Xt]), np.vstack([times, target_times[ok]]), sample_weight=w)


def source_inputs(train: np.ndarray, n_sources: int, random_state: int = 0) -> np.ndarray:
    """The training inputs whose rows the trees learn from on each of ``n_sources`` sources:
    all of ``train``, or beyond ``min(MAX_SOURCE_INPUTS, MAX_SOURCE_ROWS // n_sources)`` a sorted
    random sample of that many (the same on every source, so the trees compare devices on it)."""
    if n_sources < 1:
        raise ValueError(f"few-shot trees need at least one source, got {n_sources}")
    bound = max(1, min(MAX_SOURCE_INPUTS, MAX_SOURCE_ROWS // n_sources))
    train = np.asarray(train)
    if len(train) <= bound:
        return train
    return np.sort(np.random.default_rng(random_state).choice(train, bound, replace=False))


class TreesRefit:
    """Refining mode's refit from the sources' rows (``Refiner(..., refit=TreesRefit(...))``):
    the rows production calls timed on the target, each with the variants it ran, join the
    sources' rows in :func:`fit_few_shot_trees` (one booster per variant, the target weighted as
    one source), and the result replaces the model refining started with (a ``gbt`` model
    holding the target's device features as constants). Unlike the kernel correction of
    :func:`nitro.transfer.fewshot.refine_model`, which holds every untimed variant at the start
    model's prediction, the trees learn each variant from the rows that timed it."""

    def __init__(self, data: TransferData, sources: list[int], train: np.ndarray, target: int,
                 features: list[int], random_state: int = 0):
        self.data, self.sources, self.train, self.target = data, list(sources), np.asarray(train), int(target)
        self.features, self.random_state = list(features), random_state

    def __call__(self, base, X, times):
        """The refitted model from ``base``'s refining rows ``X`` (n, d) and ``times`` (n, v;
        NaN = not run, +inf = failed), or ``None`` while no row has two variants run."""
        times = np.asarray(times, dtype=np.float64)
        ran = ~np.isnan(times)
        if not ((ran.sum(axis=1) >= 2) & np.isfinite(times).any(axis=1)).any():
            return None
        est = fit_few_shot_trees(self.data, self.sources, self.train, self.target, X,
                                 np.where(np.isfinite(times), times, np.nan), self.features,
                                 random_state=self.random_state, ran=ran, max_iter=REFIT_MAX_ITER,
                                 learning_rate=REFIT_LEARNING_RATE)
        values = {self.data.device_features[j]: float(self.data.D[self.target, j]) for j in self.features}
        return SelectorModel.from_estimator(est, base.input_features, device_features=values,
                                            variants=list(self.data.variants), provenance={
                                                "method": "refined from sources' rows and target rows",
                                                "base": base.provenance, "target_rows": int(ran.any(axis=1).sum())})
