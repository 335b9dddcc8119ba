import time

import numpy as np
import pytest

from nitro.measurement import TimingPolicy, TrainingRow, measure_variants, outputs_match, time_interleaved


def test_wrong_and_raising_variants_are_failed_never_best():
    def good(x):
        return x * 2

    def wrong(x):
        return x * 2 + 1

    def boom(x):
        raise RuntimeError("bad variant")

    times, failed = measure_variants({"good": good, "wrong": wrong, "boom": boom}, (np.arange(5),),
                                     reference_variant="good", policy=TimingPolicy(min_repeats=1, max_repeats=2))
    assert times["good"] > 0 and times["wrong"] is None and times["boom"] is None
    assert failed == {"wrong": "wrong result", "boom": "raised RuntimeError: bad variant"}
    assert TrainingRow("x", {}, times, failed).best == "good"


def test_excluded_variants_are_not_run():
    calls = []
    times, failed = measure_variants({"a": lambda: calls.append(1), "b": lambda: None}, (),
                                     allowed={"a": False, "b": True})
    assert calls == [] and times["a"] is None and failed["a"] == "excluded by constraint"


def test_outputs_match_is_exact_for_integers_and_tolerant_for_floats():
    assert outputs_match(np.array([1, 2]), np.array([1, 2]))
    assert not outputs_match(np.array([1, 2]), np.array([1, 3]))
    assert not outputs_match(np.array([1, 2]), np.array([1, 2, 3]))
    assert outputs_match(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-12]))


def test_policy_validation_and_row_validation():
    with pytest.raises(ValueError):
        TimingPolicy(min_repeats=5, max_repeats=2)
    with pytest.raises(ValueError, match="malformed training row"):
        TrainingRow.from_dict({"input": "x", "features": {"N": "abc"}, "times": {}})


def test_time_interleaved_takes_turns_and_times_each_function_apart():
    calls = []

    def fast():
        calls.append("fast")

    def slow():
        calls.append("slow")
        time.sleep(0.002)

    policy = TimingPolicy(min_repeats=4, max_repeats=4, target_seconds=0.0, isolate=False)
    t_fast, t_slow = time_interleaved([fast, slow], (), policy)
    assert calls == ["fast", "slow", "slow", "fast"] * 2     # forwards, then backwards
    assert t_slow >= 0.002 > t_fast
    # repetitions stop at target_seconds of work per function, once min_repeats are in
    calls.clear()
    time_interleaved([fast, slow], (), TimingPolicy(min_repeats=2, max_repeats=50, target_seconds=0.004))
    assert 2 * 2 <= len(calls) < 2 * 50
