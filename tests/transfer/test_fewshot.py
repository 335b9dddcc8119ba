"""Few-shot transfer: representative picks, a residual correction (refining mode), boosted
trees on the sources' and target's rows, and the tuner measuring
the picked inputs on this machine with real (sleeping) variants."""
import time

import numpy as np
import pytest

from nitro import TimingPolicy, autotuner, code_variant
from nitro.learn.kron import rbf
from nitro.measurement import TrainingRow
from nitro.transfer.fewshot import pick_inputs, residual_fit

SPEEDS = {"dev1": 0.5, "dev2": 1.0, "dev3": 2.0, "dev4": 4.0}
XS = list(range(1, 41))


def test_picks_cover_every_cluster():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.1, (30, 2)) for c in (0.0, 5.0, 10.0)])
    picks = pick_inputs(X, 3)
    assert sorted(int(p) // 30 for p in picks) == [0, 1, 2]
    with pytest.raises(ValueError, match="at least 1"):
        pick_inputs(X, 0)


def test_residual_fit_interpolates_a_smooth_residual():
    X = np.linspace(-2, 2, 15)[:, None]
    R = np.hstack([np.sin(X), np.cos(X)])
    alpha, lam = residual_fit(X, R, gamma=1.0)
    T = np.linspace(-1.8, 1.8, 50)[:, None]
    assert np.abs(rbf(T, X, 1.0) @ alpha - np.hstack([np.sin(T), np.cos(T)])).max() < 0.1
    assert lam <= 0.1


def sleeper(per_x, const):
    def variant(x):
        time.sleep(per_x * x + const)
        return x
    return variant


def test_tune_from_source_with_a_target_budget_measures_only_the_picks_here(store):
    """Sources: lin (x·s·0.5 ms) beats flat (5 ms) below x = 10/s. This machine: lin costs
    x·0.2 ms, so it wins up to x = 25, which no source shows: zero-shot cannot know it.
    (Milliseconds, so that sleeping stays accurate on a loaded machine.)"""
    store.declare("cross", ["lin", "flat"], ["x"])
    for dev, s in SPEEDS.items():
        store.put_device(dev, {"speed": {"value": s, "unit": "", "source": "datasheet"}})
        store.put_rows("cross", dev, [TrainingRow(f"x{x}", {"x": float(x)}, {"lin": x * s * 5e-4, "flat": 5e-3})
                                      for x in XS])
    cv = code_variant("cross", {"lin": sleeper(2e-4, 0.0), "flat": sleeper(0.0, 5e-3)},
                      {"x": lambda x: float(x)})
    cv.record, cv.device_id = True, "here"
    tuner = autotuner("cross", store=store, policy=TimingPolicy(min_repeats=3, max_repeats=3), progress=False)
    tuner.set_training_args(XS, ids=[f"x{x}" for x in XS])
    [model] = tuner.tune_from_source([cv], target_budget=8, target_features={"speed": 0.2})
    picked = model.provenance["few_shot"]["inputs"]
    # only the picks were timed here, and they are recorded for this device
    assert len(picked) == 8 and sorted(r.input_id for r in store.rows("cross", "here")) == sorted(picked)
    far = [x for x in XS if abs(x - 25) > 4]
    assert np.mean([cv.select(x) == ("lin" if x < 25 else "flat") for x in far]) >= 0.85
    assert store.model("cross", "here")["kind"] == "gbt"     # boosted trees (nitro.transfer.fewshot_trees)
    # the expected quality computed on the way is the zero-shot model's, and says so
    assert "confidence" not in model.provenance
    assert 0.0 < model.provenance["zero_shot_confidence"]["predicted_quality"] <= 1.0
