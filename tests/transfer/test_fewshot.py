"""Few-shot transfer: representative picks, a residual correction (refining mode), boosted
trees on the sources' and target's rows, and the tuner measuring
the picked inputs on this machine with real (sleeping) variants."""
import time

import numpy as np
import pytest

from nitro import TimingPolicy, autotuner, code_variant
from nitro.learn.kron import rbf
from nitro.row import TrainingRow
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


def test_picks_from_the_same_inputs_are_read_back_within_memo_kept():
    """`nitro evaluate` picks from the same training inputs for every target: within memo.kept
    the k-means runs once per budget, and what is read back is what a fresh run picks."""
    from nitro import memo
    X = np.random.default_rng(1).normal(size=(300, 3))
    fresh = pick_inputs(X, 7)
    with memo.kept():
        first = pick_inputs(X, 7)
        assert pick_inputs(X.copy(), 7) is first
        assert pick_inputs(X, 8) is not first and pick_inputs(X[::-1], 7) is not first
    assert pick_inputs(X, 7) is not first                 # kept no more
    np.testing.assert_array_equal(first, fresh)


def test_residual_fit_interpolates_a_smooth_residual():
    X = np.linspace(-2, 2, 15)[:, None]
    R = np.hstack([np.sin(X), np.cos(X)])
    alpha, lam = residual_fit(X, R, gamma=1.0)
    T = np.linspace(-1.8, 1.8, 50)[:, None]
    assert np.abs(rbf(T, X, 1.0) @ alpha - np.hstack([np.sin(T), np.cos(T)])).max() < 0.1
    assert lam <= 0.1


def test_a_corrected_model_stays_within_the_dispatch_budget_and_chooses_as_before():
    """Refining mode corrects a kernel model with every row it times: the expansion is
    re-expressed on the budget's centres, not grown by one centre per row."""
    from nitro import SelectorModel
    from nitro.learn.budget import max_centres
    from nitro.transfer.fewshot import refine_model, within_budget
    rng = np.random.default_rng(0)
    C = rng.normal(0, 1, (300, 3))
    base = SelectorModel(variants=["a", "b"], input_features=["x", "y", "z"], kind="kernel", params={
        "signed_log": True, "mean": [0.0] * 3, "scale": [1.0] * 3, "gamma": 1 / 3, "centers": C.tolist(),
        "weights": rng.normal(0, 0.1, (300, 2)).tolist(), "offset": [0.5, 0.5]})
    X = np.expm1(np.abs(rng.normal(0, 1, (1500, 3)))) * np.sign(rng.normal(0, 1, (1500, 3)))
    T = np.column_stack([1.0 + (X[:, 0] > 0), 1.5 * np.ones(len(X))])      # a wins where x <= 0
    refined = refine_model(base, X, T)
    m = max_centres(3)
    assert len(refined.params["centers"]) <= m < 300 + 1000
    assert refined.provenance["refined"]["target_rows"] == 1000                  # the most recent
    truth = np.where(X[:, 0] > 0, 1, 0)
    assert (np.array(refined.predict_index(X)) == truth).mean() > 0.9
    Z = rng.normal(0, 1, (400, 3))
    Cb, Wb = within_budget(Z, rng.normal(0, 1, (400, 2)), 1 / 3)
    assert len(Cb) == 400 and Wb.shape == (400, 2)            # within the budget: unchanged


def sleeper(per_x, const):
    def variant(x):
        time.sleep(per_x * x + const)
        return x
    return variant


def _cross_sources(store):
    """The sources' rows of "cross" (lin beats flat below x = 10/s) and this machine's code variant,
    whose lin costs x·0.2 ms."""
    store.declare("cross", ["lin", "flat"], ["x"])
    for dev, s in SPEEDS.items():
        store.put_device(dev, {"speed": {"value": s, "unit": "", "source": "datasheet"}})
        store.put_rows("cross", dev, [TrainingRow(f"x{x}", {"x": float(x)}, {"lin": x * s * 5e-4, "flat": 5e-3})
                                      for x in XS])
    cv = code_variant("cross", {"lin": sleeper(2e-4, 0.0), "flat": sleeper(0.0, 5e-3)},
                      {"x": lambda x: float(x)})
    cv.record, cv.device_id = True, "here"
    return cv


def test_tune_from_source_with_a_target_budget_measures_only_the_picks_here(store):
    """Sources: lin (x·s·0.5 ms) beats flat (5 ms) below x = 10/s. This machine: lin costs
    x·0.2 ms, so it wins up to x = 25, which no source shows: zero-shot cannot know it.
    (Milliseconds, so that sleeping stays accurate on a loaded machine.)"""
    cv = _cross_sources(store)
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
    # the timed inputs measure both models: the zero-shot one's choices and the trees' by cross-validation
    e = model.provenance["few_shot"]["estimate"]
    assert e["inputs"] == 8 and e["folds"] == 5 and 0.0 < e["quality"] <= 1.0 and e["stderr"] >= 0.0
    assert 0.0 < e["zero_shot_on_timed"] <= 1.0
    assert cv.explain(3)["predicted_quality"] == e["quality"]


def test_a_target_budget_picks_only_among_the_inputs_this_tuner_can_time(store):
    """The sources timed train and test inputs alike (an imported data set); a tuner given only
    the training half picks among those, and one given none says what is missing."""
    cv = _cross_sources(store)
    policy = TimingPolicy(min_repeats=1, max_repeats=1, isolate=False)
    tuner = autotuner("cross", store=store, policy=policy, progress=False)
    with pytest.raises(ValueError, match="none of the sources' .* among the 0 inputs given to time .*set_training_args"):
        tuner.tune_from_source([cv], target_budget=6, target_features={"speed": 0.2}, save=False)
    mine = XS[::3]
    tuner.set_training_args(mine, ids=[f"x{x}" for x in mine])
    [model] = tuner.tune_from_source([cv], target_budget=6, target_features={"speed": 0.2})
    picked = model.provenance["few_shot"]["inputs"]
    assert len(picked) == 6 and set(picked) <= {f"x{x}" for x in mine}
