"""Scoring a tuned code variant on test inputs: exhaustive test-set times and its choices."""
from __future__ import annotations

import numpy as np

from .. import device_lock, devices
from ..measurement import TimingPolicy, measure_variants
from ..variant import CodeVariant


def as_args(item) -> tuple:
    """A test input as a call's argument tuple, as ``set_training_args`` reads its items."""
    return item if isinstance(item, tuple) else (item,)


def test_times(cv: CodeVariant, inputs, policy: TimingPolicy | None = None) -> np.ndarray:
    """(inputs × variants) seconds of every variant on every test input, as tuning records them
    (the fastest sample); NaN where a variant failed or is excluded (scoring only: nothing is recorded)."""
    rows, policy = [], policy or TimingPolicy()
    device = cv.device_id or devices.current_device_id()
    for item in inputs:
        args = as_args(item)
        reference = cv.reference(*args) if cv.reference is not None else None
        feats = cv.compute_features(*args)
        with device_lock.timing_for(device, policy.exclusive):     # as tuning times: one process at a time
            times, _ = measure_variants(cv.variants, args, reference=reference, reference_variant=cv.default,
                                        check=cv.check, allowed=cv.allowed(feats), policy=policy)
        rows.append([np.nan if t is None else t for t in times.values()])
    return np.array(rows, dtype=np.float64)


def choices(cv: CodeVariant, inputs) -> np.ndarray:
    """Index of the variant ``cv`` dispatches to on each input."""
    names = cv.variant_names
    return np.array([names.index(cv.select(*as_args(item))) for item in inputs])
