import time

import numpy as np
import pytest

from nitro import TimingPolicy, autotuner, code_variant
from nitro.measurement import measure_variants
from nitro.search import SKIPPED, EarlyStopping, budget_count, prior_order, spread_indices


def sleeper(seconds):
    def variant(x):
        time.sleep(seconds(x) if callable(seconds) else seconds)
        return x
    return variant


def test_vuduc_rule_on_a_hand_computed_example():
    es = EarlyStopping(epsilon=0.05, alpha=0.1)
    # speeds 1 and 0.5: F(0.95) = 1/2, n = 3 of 6; Pr = 3/6 * 2/5 = 0.2
    assert not es.should_stop([1.0, 2.0], 6)
    assert EarlyStopping(epsilon=0.05, alpha=0.25).should_stop([1.0, 2.0], 6)
    # both within 5% of the best: no observed variant is far, Pr = 0
    assert es.should_stop([1.0, 1.01], 6)
    # 4 of 5 far: n = 4.8; Pr = 4.8/6 * 3.8/5 * 2.8/4 * 1.8/3 * 0.8/2 = 0.061
    assert es.should_stop([1.0, 3.0, 3.0, 3.0, 3.0], 6)
    assert not es.should_stop([1.0], 6)                  # fewer than min_variants
    assert es.should_stop([1.0, 2.0, 3.0], 3)            # nothing left to try
    with pytest.raises(ValueError, match="invalid early-stopping"):
        EarlyStopping(alpha=1.5)


@pytest.mark.parametrize("kwargs, error, says", [
    ({"alpha": 1.5}, ValueError, "alpha must be in \\(0, 1\\), got 1.5"),
    ({"epsilon": float("nan")}, ValueError, "epsilon must be in"),
    ({"race": -1}, ValueError, "race must be positive, got -1"),
    ({"min_variants": 0}, ValueError, "min_variants must be at least 1, got 0"),
    ({"exhaustive_inputs": -3}, ValueError, "exhaustive_inputs must be at least 0, got -3"),
    ({"epsilon": "0.1"}, TypeError, "epsilon is a number, got '0.1'"),
    ({"min_variants": 2.5}, TypeError, "min_variants is a whole number, got 2.5"),
    ({"race": True}, TypeError, "race is a number, got True"),
])
def test_early_stopping_names_the_tolerance_out_of_range(kwargs, error, says):
    """A bad tolerance was refused with the whole dataclass and no word of which field was wrong,
    a negative exhaustive_inputs was taken, and a text epsilon failed with a bare comparison error."""
    with pytest.raises(error, match=says):
        EarlyStopping(**kwargs)


def test_racing_cuts_repetitions_of_clearly_slower_variants():
    variants = {"fast": sleeper(0.001), "slow": sleeper(0.01)}
    policy = TimingPolicy(min_repeats=2, max_repeats=6, target_seconds=10.0, isolate=False)
    full, raced = {}, {}
    measure_variants(variants, (1,), policy=policy, counts=full, reference_variant="fast")
    times, failed = measure_variants(variants, (1,), policy=policy, counts=raced, reference_variant="fast",
                                     early_stopping=EarlyStopping(min_variants=3))
    assert full["calls"] == 2 * (1 + 6)
    assert raced["calls"] == (1 + 6) + (1 + 2)          # slow: checked once, timed min_repeats times
    assert times["slow"] > 5 * times["fast"] and not failed


def test_one_slow_sample_does_not_race_a_variant_out():
    """A first timed call slowed by chance (a thread pool waking up) must not become the
    variant's recorded time: racing waits for ``min_repeats`` samples."""
    calls = {"n": 0}

    def hiccup(x):          # warm-up fast, first timed call slow, then fast
        calls["n"] += 1
        time.sleep(0.03 if calls["n"] == 2 else 0.002)
        return x

    variants = {"steady": sleeper(0.003), "hiccup": hiccup}
    policy = TimingPolicy(min_repeats=3, max_repeats=3, target_seconds=0.0, isolate=False)
    times, _ = measure_variants(variants, (1,), policy=policy, reference_variant="steady",
                                early_stopping=EarlyStopping(min_variants=3))
    assert times["hiccup"] < times["steady"]


def test_early_stopping_skips_the_rest_and_keeps_the_best_measured():
    """Equal variants: after two, Vuduc's rule sees no variant far slower and stops. (With 2 ms
    sleeps and ε = 0.5 a busy machine stretched one sleep past 2× and the rule went on; 20 ms
    and ε = 0.9 need one stretched 10×.)"""
    variants = {f"v{i}": sleeper(0.02) for i in range(6)}
    times, failed = measure_variants(variants, (1,), policy=TimingPolicy(min_repeats=1, max_repeats=1),
                                     early_stopping=EarlyStopping(epsilon=0.9))
    measured = [v for v, t in times.items() if t is not None]
    assert len(measured) == 2 and all(failed[v] == SKIPPED for v in variants if v not in measured)


def test_prior_order_and_spread_and_budget():
    assert prior_order(["a", "b", "c"], {"c": 5, "b": 1}) == ["c", "b", "a"]
    assert prior_order(["a", "b", "c"], {"c": 5}, first="a") == ["a", "c", "b"]
    X = np.array([[1.0], [1.1], [1000.0], [1e6], [1.05]])
    assert sorted(spread_indices(X, 3)) == [0, 2, 3]
    assert budget_count(0.25, 10) == 3 and budget_count(4, 10) == 4 and budget_count(40, 10) == 10
    assert budget_count(np.int64(4), 10) == 4 and budget_count(np.float32(0.25), 10) == 3    # NumPy numbers
    for bad in (0, 1.5, -0.1, "3", True, np.True_):
        with pytest.raises((ValueError, TypeError)):
            budget_count(bad, 10)


def test_active_learning_measures_within_budget_and_learns_the_crossover():
    """lin costs x * 0.3 ms, flat 3 ms: lin wins below x = 10. The median of 3 timings, so that
    one call stretched by a loaded machine does not decide an input (1 or 2 timings once left 76%
    of the inputs right while two other jobs held both cores)."""
    cv = code_variant("cross", {"lin": sleeper(lambda x: x * 3e-4), "flat": sleeper(3e-3)}, {"x": lambda x: float(x)})
    tuner = autotuner("cross", policy=TimingPolicy(min_repeats=3, max_repeats=3, target_seconds=0.0), progress=False)
    xs = list(range(1, 31))
    tuner.set_training_args(xs)
    rows = tuner.measure_actively(cv, budget=10)
    assert len(rows) <= 10 and len({r.input_id for r in rows}) == len(rows)
    tuner.tune([cv], budget=10, early_stopping=EarlyStopping())
    right = [cv.select(x) == ("lin" if x < 10 else "flat") for x in xs if abs(x - 10) > 2]
    assert np.mean(right) >= 0.9


def _always_fast(n_inputs):
    """'fast' sleeps 0.2 ms, 'slow' 10 ms: a 50x gap, so that a loaded CI machine (repeated
    timings disagreeing by 35-160%) never lets 'slow' win an input (a 10x gap timed twice once
    did); the median of 3 timings also outvotes one stretched call."""
    cv = code_variant("plateau", {"fast": sleeper(2e-4), "slow": sleeper(1e-2)}, {"x": lambda x: float(x)})
    policy = TimingPolicy(min_repeats=3, max_repeats=3, target_seconds=0.0, isolate=False)
    tuner = autotuner("plateau", policy=policy, progress=False)
    tuner.set_training_args(list(range(1, n_inputs + 1)))
    return cv, tuner


def test_active_learning_stops_once_new_batches_of_30_inputs_were_chosen_well_and_changed_nothing():
    """'fast' always wins: after the spread-out first quarter (30 of 120) the model chooses right
    on the next two batches of 15, measured after it chose, and learning them changes none of
    its choices; 30 inputs without a miss are enough, so the rest of the budget is not spent."""
    cv, tuner = _always_fast(120)
    rows = tuner.measure_actively(cv, budget=120)
    assert len(rows) == 30 + 2 * 15 and all(r.best == "fast" for r in rows)


def test_active_learning_does_not_stop_on_a_few_small_batches():
    """The same computation on 30 inputs: batches of 4 after the first 8 never add up to the 30
    inputs a plateau needs, so the whole budget is measured (two lucky batches of 4 stopped
    half-way before, and lost points on real histograms)."""
    cv, tuner = _always_fast(30)
    rows = tuner.measure_actively(cv, budget=30)
    assert len(rows) == 30 and all(r.best == "fast" for r in rows)


def test_early_stopping_retimes_undecided_contenders_only_up_to_max_repeats():
    calls = {"n": 0}

    def drifting(x):              # one fast call in four: any 4 calls in a row have halves that disagree
        calls["n"] += 1          # (6 ms against 18 ms), more than its gap to steady's 12 ms
        time.sleep(0.006 if calls["n"] % 4 == 0 else 0.018)
        return x

    variants = {"steady": sleeper(0.012), "drifting": drifting}
    policy = TimingPolicy(min_repeats=4, max_repeats=4, target_seconds=0.0, isolate=False, max_rounds=16)
    verdict = {}
    measure_variants(variants, (1,), policy=policy, reference_variant="steady",
                     early_stopping=EarlyStopping(min_variants=3, race=10.0), verdict=verdict)
    assert verdict["status"] == "undecided" and verdict["rounds"] == 4   # exhaustive would go on to 16


def test_spread_takes_a_size_in_millions_in_its_unit():
    """Farthest points in millions spread over the decades as in counts (log1p alone is nearly
    linear below 1: from the largest size it picked nothing between 103 and 360,000)."""
    rng = np.random.default_rng(0)
    X = np.exp(rng.uniform(np.log(100), np.log(1e7), (200, 1)))
    for scale in (1.0, 1e6):
        picked = X[spread_indices(X / scale, 6, start=int(X.argmax()))].ravel()
        assert ((picked > 300) & (picked < 1e5)).sum() >= 2, scale


def test_an_exhaustive_tune_measures_again_the_inputs_an_early_stopping_run_cut_short(store):
    """Equal variants: early stopping times two of six on each input and skips the rest; an
    exhaustive tune() after it (resuming, not remeasure) times all six there, not the two."""
    cv = code_variant("resumed", {f"v{i}": sleeper(0.002) for i in range(6)}, {"x": lambda x: float(x)})
    cv.record, cv.device_id = True, "dev"
    tuner = autotuner("resumed", store=store, policy=TimingPolicy(min_repeats=1, max_repeats=1, target_seconds=0.0),
                      progress=False)
    tuner.set_training_args([1, 2, 3, 4, 5])
    tuner.measure(cv, early_stopping=EarlyStopping(epsilon=0.9, exhaustive_inputs=0))
    assert any(SKIPPED in r.failed.values() for r in store.rows("resumed", "dev"))
    early = store.rows("resumed", "dev")
    tuner.measure(cv, early_stopping=EarlyStopping(epsilon=0.9, exhaustive_inputs=0))     # resumes: nothing new
    assert store.rows("resumed", "dev") == early
    rows = tuner.measure(cv)
    assert len(rows) == 5 and all(not r.failed and all(t is not None for t in r.times.values()) for r in rows)
    assert store.rows("resumed", "dev") == sorted(rows, key=lambda r: r.input_id)
