"""Bergstra et al.'s regression selector: ζ for failures, search on the model with fallback,
and cross-device use through tune_from_source."""
import math

import numpy as np
import pytest

from nitro import code_variant
from nitro.learn import RegressionSelector
from nitro.row import TrainingRow
from nitro.model import SelectorModel
from nitro.tuner import autotuner


def test_targets_are_log_speedups_with_zeta_below_the_slowest():
    T = np.array([[1.0, 2.0, 4.0], [1.0, np.nan, 1.0]])
    y = RegressionSelector(zeta=math.log(0.5)).targets(T)
    assert np.allclose(y[0], [math.log(2), 0.0, -math.log(2)])
    assert np.isclose(y[1, 1], math.log(0.5)) and np.allclose(y[1, [0, 2]], 0.0)
    # a failed variant scores below the slowest valid one of its input, whatever ζ
    T = np.array([[1.0, 100.0, np.nan]])
    y = RegressionSelector().targets(T)
    assert y[0, 2] < y[0, 1] < y[0, 0]
    # per-variant boosters learn the log slow-down from the input's best
    y = RegressionSelector(per_variant=True).targets(np.array([[2.0, 1.0, 4.0], [1.0, np.nan, 3.0]]))
    assert np.allclose(y[0], [-math.log(2), 0.0, -math.log(4)])
    assert np.isclose(y[1, 1], -math.log(3) + math.log(0.5))


def tile_time(x, tile, unroll):
    """A configuration landscape: run time is least at tile = x/8, unroll = 4."""
    return (1 + (np.log2(tile) - np.log2(x / 8)) ** 2) * (1 + 0.1 * (unroll - 4) ** 2)


SPACE = {"tile": [2.0 ** e for e in range(1, 11)], "unroll": [1.0, 2.0, 3.0, 4.0, 6.0, 8.0]}


@pytest.fixture(scope="module")
def configured():
    """Trained on a sample of 24 of the 60 configurations, as parameterised variants."""
    rng = np.random.default_rng(0)
    grid = np.array([(t, u) for t in SPACE["tile"] for u in SPACE["unroll"]])
    sample = grid[rng.choice(len(grid), 24, replace=False)]
    xs = 2.0 ** rng.uniform(4, 12, 80)
    T = np.array([[tile_time(x, t, u) for t, u in sample] for x in xs])
    return RegressionSelector(variant_codes=sample).fit(np.log2(xs)[:, None], T), grid


def test_search_on_the_model_finds_good_configurations_without_running_them(configured):
    est, grid = configured
    for x in (64.0, 512.0, 2048.0):
        config = est.search([np.log2(x)], SPACE)
        times = [tile_time(x, t, u) for t, u in grid]
        got = tile_time(x, config["tile"], config["unroll"])
        assert got <= 2.5 * min(times) and got <= 0.5 * np.median(times)


def test_search_and_run_falls_back_when_a_configuration_fails(configured):
    est, _ = configured
    first = est.search([9.0], SPACE)
    tried = []

    def run(config):
        tried.append(dict(config))
        if config == first:
            raise MemoryError("tile does not fit")
        return "ran"

    config, result = est.search_and_run([9.0], SPACE, run)
    assert result == "ran" and tried[0] == first and config != first and len(tried) == 2
    with pytest.raises(RuntimeError, match="configurations failed"):
        est.search_and_run([9.0], SPACE, lambda c: 1 / 0, max_tries=3)


def test_tune_from_source_with_a_selector_by_name(store):
    """Four source devices whose bandwidth moves the crossover of two variants; the target's
    model holds its own bandwidth as a constant and dispatches through a code variant."""
    variants, features = ["narrow", "wide"], ["n"]
    store.declare("xover", variants, features)
    rng = np.random.default_rng(0)
    sizes = 2.0 ** rng.uniform(4, 20, 60)
    for bw in (100.0, 200.0, 400.0, 800.0):
        dev = f"gpu{int(bw)}"
        store.put_device(dev, {"bandwidth": {"value": bw, "unit": "GB/s", "source": "test"}})
        for i, n in enumerate(sizes):
            times = {"narrow": n / bw, "wide": 1e4 / bw + n / (4 * bw) * (1 + 0.01 * rng.random())}
            store.put_row("xover", dev, TrainingRow(f"in{i}", {"n": float(n)}, times))
    store.put_device("target", {"bandwidth": {"value": 300.0, "unit": "GB/s", "source": "test"}})
    cv = code_variant("xover", {"narrow": lambda n: "narrow", "wide": lambda n: "wide"}, {"n": lambda n: n})
    cv.device_id = "target"
    model, = autotuner("xover", store=store, learner="regression", progress=False).tune_from_source([cv])
    assert model.kind == "gbt" and model.device_features == {"bandwidth": 300.0}
    assert model.provenance["learner"] == "RegressionSelector"
    assert SelectorModel.from_dict(store.model("xover", "target")).predict([[16.0], [1e6]]) == ["narrow", "wide"]
    assert cv(16.0) == "narrow" and cv(1e6) == "wide"


def test_per_variant_boosters_export_to_one_ensemble_that_chooses_the_same():
    """One booster per variant, exported as one ``gbt`` ensemble with its trees grouped by
    variant (``variant_trees``): the Python model and the compiled dispatch choose exactly as
    the estimator, and each variant's score is its own booster's prediction."""
    import json
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 10, 300), rng.normal(size=300)])
    T = np.column_stack([1 + X[:, 0], 6 + 0.2 * X[:, 0] * (X[:, 1] > 0), 12 - X[:, 0]]) * np.exp(rng.normal(0, 0.05, (300, 3)))
    T[rng.random(300) < 0.05, 1] = np.nan
    est = RegressionSelector(per_variant=True, max_iter=50).fit(X, T)
    assert len(est.boosters_) == 3
    scores = est.predict_scores(X)
    assert np.allclose(scores[:, 2], est.boosters_[2].predict(X))
    model = SelectorModel.from_dict(json.loads(json.dumps(
        SelectorModel.from_estimator(est, ["a", "b"], variants=["x", "y", "z"]).to_dict())))
    Xq = np.vstack([X, np.column_stack([rng.uniform(-5, 15, 500), rng.normal(0, 3, 500)])])
    expected = [["x", "y", "z"][i] for i in est.predict(Xq)]
    assert model.kind == "gbt" and model.predict(Xq) == expected
    fast = model.compiled()
    assert [model.variants[i] for i in fast.predict_batch(Xq)] == expected
    compiled = np.array([fast.scores_one(row) for row in Xq[:50].tolist()])   # refining mode ranks by these
    assert np.allclose(compiled, model.scores(Xq[:50]))
    best = np.nanargmin(np.where(np.isnan(T), np.inf, T), axis=1)
    assert (est.predict(X) == best).mean() > 0.9
    with pytest.raises(ValueError, match="variant_codes"):
        RegressionSelector(per_variant=True, variant_codes=np.eye(3)).fit(X, T)


def test_a_zero_weight_leaves_a_variants_entry_out_of_its_booster():
    """Rows that timed only some variants (refining mode) are given with an (n, v) weight: a
    variant's entries of weight 0 do not reach its booster, whatever their (NaN) time, and the
    other variants learn from the same rows as without them."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(200, 1))
    T = np.column_stack([np.ones(200), np.where(X[:, 0] < 0.5, 0.5, 2.0), np.full(200, 1.5)])
    W = np.ones_like(T)
    untimed = rng.random(200) < 0.5
    W[untimed, 1] = 0.0
    partial = T.copy()
    partial[untimed, 1] = np.nan                      # not run: without its weight, a "failure"
    est = RegressionSelector(per_variant=True, max_iter=20).fit(X, partial, sample_weight=W)
    ref = RegressionSelector(per_variant=True, max_iter=20).fit(X[~untimed], T[~untimed])
    grid = np.r_[np.linspace(0, 0.45, 10), np.linspace(0.55, 1, 10)][:, None]   # away from the step
    assert np.allclose(est.boosters_[1].predict(grid), ref.boosters_[1].predict(grid))
    assert (est.predict(grid) == np.where(grid[:, 0] < 0.5, 1, 0)).all()
    naive = RegressionSelector(per_variant=True, max_iter=20).fit(X, partial)   # NaN taken as failures
    assert (naive.predict(grid[:10]) == 0).sum() > 0
    with pytest.raises(ValueError, match="finite non-negative"):
        RegressionSelector().fit(X, T, sample_weight=np.ones((200, 2)))


def test_weighted_boosters_bin_like_unweighted_ones_and_still_weigh_the_gradients():
    """scikit-learn ≥ 1.6 bins a weighted fit by one weighted percentile per bin edge (slow):
    the booster keeps the unweighted edges, while the weights still change what it learns."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from nitro.learn.regression import UnweightedBinning
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3))
    y = np.where(X[:, 0] > 0, 1.0, 0.0) + 0.1 * rng.normal(size=3000)
    w = np.where(X[:, 1] > 1.0, 40.0, 1.0)                   # a small, heavy region
    weighted = UnweightedBinning(max_iter=10, early_stopping=False, random_state=0).fit(X, y, sample_weight=w)
    plain = HistGradientBoostingRegressor(max_iter=10, early_stopping=False, random_state=0).fit(X, y)
    for mine, ref in zip(weighted._bin_mapper.bin_thresholds_, plain._bin_mapper.bin_thresholds_):
        assert np.array_equal(mine, ref)
    y2 = y + np.where(X[:, 1] > 1.0, 5.0, 0.0)               # the heavy region differs
    a = UnweightedBinning(max_iter=10, early_stopping=False, random_state=0).fit(X, y2, sample_weight=w)
    b = UnweightedBinning(max_iter=10, early_stopping=False, random_state=0).fit(X, y2)
    assert not np.allclose(a.predict(X), b.predict(X))
    assert np.allclose(UnweightedBinning(max_iter=10, early_stopping=False, random_state=0)
                       .fit(X, y, sample_weight=np.full(3000, 2.0)).predict(X), plain.predict(X))
