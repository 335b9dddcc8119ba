"""Few-shot transfer by boosted trees: the sources' rows and a few of the target's, one model.

The rows ``[input ∘ device features]`` of every source and the handful of target inputs timed
on the target train one :class:`nitro.learn.RegressionSelector` with one booster per variant
(``per_variant``: each learns its variant's log slow-down from the input's best). The target's
rows are weighted so that together they count as much as one source's (weight
``n_source_inputs / n_target_inputs``): with 2% of the inputs timed, the target is one more
device among the sources, not a rounding error beside them. Trees split on the device features
where the target's rows disagree with its neighbours' and so learn target behaviour no source
shows, while inputs far from any target row keep the sources' answer.

Measured on the Ginkgo SpMV data (2% of the training inputs, k-means picks): 97.2% of the
optimum mean leave-one-GPU-out and 96.7% leave-one-family-out (one booster shared by all
variants, over ``[input ∘ device ∘ variant code]``: 96.9 and 96.3; the residual correction of
the kernel model, :mod:`nitro.transfer.fewshot`, which refining mode uses to correct a kernel
model in place: 96.0 and 96.0).

Each source contributes at most ``MAX_SOURCE_INPUTS`` training inputs (a random sample beyond):
the trees' fit then costs the same at 10⁵ inputs as at 10⁴, and the few target rows keep
their weight of one source.
"""
from __future__ import annotations

import numpy as np

from ..learn.regression import RegressionSelector
from .data import TransferData, concatenate, stack_times

MAX_SOURCE_INPUTS = 4000
# Trees per variant and their step: 100 at 0.2 dispatch as fast as the 200 shared trees of one
# booster over all variants (~8 us on SpMV's 4 variants); 200 at 0.1 scored 0.0-0.3 points
# higher on the SpMV data but took 18 us.
MAX_ITER, LEARNING_RATE = 100, 0.2


def fit_few_shot_trees(data: TransferData, sources: list[int], train: np.ndarray, target: int,
                       target_inputs: np.ndarray, target_times: np.ndarray, features: list[int],
                       random_state: int = 0) -> RegressionSelector:
    """Boosted trees on the ``sources``' ``train`` rows plus ``target_times`` (n, v) measured
    on the target at ``target_inputs``, over ``[input ∘ device features[features]]``."""
    if len(train) > MAX_SOURCE_INPUTS:
        train = np.sort(np.random.default_rng(random_state).choice(train, MAX_SOURCE_INPUTS, replace=False))
    X, times = stack_times(data, sources, train, features)
    ok = np.isfinite(target_times).any(axis=1)
    if not ok.any():
        raise ValueError("no variant ran on the target for any of the chosen inputs")
    Xt = concatenate(data.X[target_inputs[ok]], data.D[target, features])
    weight = len(X) / len(sources) / ok.sum()
    w = np.r_[np.ones(len(X)), np.full(ok.sum(), weight)]
    return RegressionSelector(per_variant=True, max_iter=MAX_ITER, learning_rate=LEARNING_RATE,
                              random_state=random_state).fit(np.vstack([X, Xt]), np.vstack([times, target_times[ok]]),
                                                             sample_weight=w)
