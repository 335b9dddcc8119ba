"""Verdicts on timed samples and the tuning report (pure functions on given samples)."""
import math

import pytest

from nitro.noise import advice, format_report, judge, spread, summarize


def test_spread_compares_the_fastest_sample_of_each_half():
    assert spread([2.0, 1.0, 1.0, 1.1]) == 0.0              # both halves reach 1.0
    assert spread([3.0, 3.0, 1.0, 2.0]) == pytest.approx(2.0)   # a slow first half: min 3 against 1
    assert math.isnan(spread([1.0]))


def test_one_preempted_sample_never_decides_a_label():
    # "a" is faster on every sample but one, which lost a scheduler slice
    verdict = judge({"a": [1.0, 1.0, 50.0, 1.0], "b": [1.5, 1.5, 1.5, 1.5]}, tie=0.03)
    assert verdict.best == "a" and verdict.status == "decided" and verdict.gap == pytest.approx(0.5)


def test_gaps_within_the_noise_are_undecided_and_name_the_contenders():
    # the best's halves disagree by 50%, more than its 10% lead; "c" is clearly slower
    verdict = judge({"a": [1.5, 1.5, 1.0, 1.0], "b": [1.1, 1.1, 1.1, 1.1], "c": [9.0, 9.0, 9.0, 9.0]}, tie=0.03)
    assert verdict.status == "undecided" and verdict.best == "a" and verdict.contenders == ["a", "b"]
    assert verdict.gap == pytest.approx(0.1) and verdict.noise == pytest.approx(0.5)


def test_an_undecided_verdict_gives_the_gap_and_noise_of_the_variant_not_separated():
    # the runner-up "b" is clearly behind (100% slower, steady); "c", 200% slower, has halves
    # disagreeing by 300%: the input is undecided because of "c", and its figures say so
    verdict = judge({"a": [1.0, 1.0], "b": [2.0, 2.0], "c": [12.0, 3.0]}, tie=0.03)
    assert verdict.status == "undecided" and verdict.contenders == ["a", "c"]
    assert verdict.gap == pytest.approx(2.0) and verdict.noise == pytest.approx(3.0)
    assert verdict.gap <= verdict.noise


def test_a_known_small_gap_is_a_tie_and_a_small_gap_with_large_noise_is_not():
    assert judge({"a": [1.0, 1.0], "b": [1.01, 1.01]}, tie=0.03).status == "tie"
    assert judge({"a": [1.2, 1.0], "b": [1.01, 1.01]}, tie=0.03).status == "undecided"
    assert judge({"a": [1.0]}, tie=0.03).status == "decided"
    assert judge({}, tie=0.03).best is None


def test_report_counts_verdicts_and_warns_only_above_the_share():
    decided = {"best": "a", "gap": 0.5, "noise": 0.01, "status": "decided"}
    undecided = {"best": "a", "gap": 0.08, "noise": 0.3, "status": "undecided"}
    tie = {"best": "a", "gap": 0.01, "noise": 0.005, "status": "tie"}
    calm = summarize([decided] * 18 + [tie, undecided])
    assert (calm["decided"], calm["ties"], calm["undecided"], calm["too_noisy"]) == (18, 1, 1, False)
    wide = summarize([decided] * 19 + [{**undecided, "gap": 0.5, "noise": 1.4}])   # a 50% lead is no near tie
    assert wide["advice"].endswith("few enough to learn around (at most 10% of the inputs)"), wide["advice"]
    noisy = summarize([decided] * 5 + [undecided] * 5)
    assert noisy["too_noisy"] and noisy["undecided_median_gap"] == pytest.approx(0.08)
    assert noisy["undecided_median_noise"] == pytest.approx(0.3)
    text = format_report(noisy)
    assert "WARNING" in text and "5 of 10 inputs stayed undecided" in text and "8.0%" in text and "30.0%" in text
    assert "too noisy" in noisy["advice"] and "uptime" in noisy["advice"]
    assert advice(summarize([])) == "no input was measured in this run"


def test_advice_after_early_stopping_names_max_repeats_not_max_rounds():
    """Early stopping re-times undecided contenders up to max_repeats only, yet its report advised
    TimingPolicy(max_rounds=...), which changes nothing there."""
    decided = {"best": "a", "gap": 0.5, "noise": 0.01, "status": "decided"}
    undecided = {"best": "a", "gap": 0.08, "noise": 0.3, "status": "undecided"}
    plain = summarize([decided] * 5 + [undecided] * 5)["advice"]
    assert "TimingPolicy(max_rounds=...)" in plain and "max_repeats" not in plain
    raced = summarize([decided] * 5 + [undecided] * 5, early_stopping=True)["advice"]
    assert "TimingPolicy(max_repeats=...)" in raced and "without early_stopping" in raced, raced
