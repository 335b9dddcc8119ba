import numpy as np
import pytest

from nitro.measurement import TimingPolicy, TrainingRow, measure_variants, outputs_match


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
