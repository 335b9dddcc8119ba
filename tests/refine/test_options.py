"""Refining options: checked before anything runs, with errors naming them, and the advice where
a zero-shot model far from its sources is refined on the default budgets."""
import warnings

import pytest

from nitro import code_variant

from tests.refine.helpers import kernel_model, tagged, make_cv


OUTSIDE = {"level": "low", "outside_sources": True, "low_because": ["outside the sources' device features"]}


@pytest.mark.parametrize("provenance, options, warns", [
    ({"confidence": OUTSIDE}, {}, True),
    ({"confidence": OUTSIDE}, {"time_budget": 0.05}, False),          # a larger budget: the advice taken
    ({"confidence": OUTSIDE, "few_shot": {"inputs": ["i0"]}}, {}, False),   # timed on the target already
    ({"confidence": {**OUTSIDE, "outside_sources": False}}, {}, False),
    ({"confidence": {**OUTSIDE, "level": "high"}}, {}, False),
    ({}, {}, False)])
def test_refining_a_low_model_outside_its_sources_says_what_to_do_first(provenance, options, warns):
    """Such a model can be sure where it is wrong, and the default time budget pays for few
    explored calls in a short stream: refine() says so and points to few-shot and to the budgets
    that shortened such streams in replays."""
    cv = make_cv([])
    cv.model.provenance = provenance
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        refiner = cv.refine(refit_every=10_000, **options)
    refiner.stop()
    said = [str(w.message) for w in caught if "Time a few inputs on this device first" in str(w.message)]
    assert bool(said) == warns
    assert not said or "outside the sources' device features" in said[0] and \
        "refine with larger budgets (refine(budget=0.05, time_budget=0.03))" in said[0]


@pytest.mark.parametrize("infinite", [float("inf"), None])
def test_an_infinite_time_budget_is_no_bound_as_none_is(infinite):
    """time_budget=inf was taken silently as a share, with arithmetic on it (inf × 0 seconds
    served is NaN); it now means no bound, as None does, and NaN or a negative share is refused."""
    cv = make_cv([])
    refiner = cv.refine(time_budget=infinite, refit_every=10_000)
    stats = refiner.stop()
    assert refiner.time_budget is None and stats["time_budget"] is None and stats["allowed_share"] is None
    for bad in (float("nan"), -0.5, float("-inf")):
        with pytest.raises(ValueError, match=rf"positive share of the served time \(None or inf: no bound; .*got {bad}"):
            cv.refine(time_budget=bad)


def test_refine_arguments_are_checked():
    cv = code_variant("nomodel", tagged([]), {"x": lambda x: float(x)})
    with pytest.raises(ValueError, match="refines a model"):
        cv.refine()
    cv.model = kernel_model()
    with pytest.raises(TypeError, match="store="):
        cv.refine(object())
    with pytest.raises(ValueError, match="budget"):
        cv.refine(budget=0.0)
    with pytest.raises(ValueError, match="at least 2"):
        cv.refine(candidates=1)
    assert cv.refiner is None


@pytest.mark.parametrize("options, error, message", [
    (dict(store=42), TypeError, "store is a nitro Store or a Redis URL, got 42"),
    (dict(store="not a url"), ValueError, "is not a Redis URL"),
    (dict(refit="trees"), TypeError, "refit is a callable"),
    (dict(repeats=2.5), TypeError, "got repeats=2.5"), (dict(refit_every=2.5), TypeError, "got refit_every=2.5"),
    (dict(budget="0.1"), TypeError, "got budget='0.1'"), (dict(budget=None), TypeError, "got budget=None"),
    (dict(candidates="all"), TypeError, "got candidates='all'"), (dict(candidates=True), TypeError, "candidates=True"),
    (dict(time_budget=0), ValueError, "positive share of the served time"),
    (dict(candidates=0), ValueError, "at least 2 variants"),
    (dict(audit=1.5), ValueError, "audit is a share of the sure candidate calls"),
    (dict(audit="some"), TypeError, "got audit='some'"),
    (dict(refit_every=0), ValueError, "got refit_every=0"), (dict(repeats=0), ValueError, "got repeats=0"),
    (dict(window=0), ValueError, "got window=0"), (dict(warmup=-1), ValueError, "got warmup=-1"),
    (dict(queue_size=0), ValueError, "got queue_size=0"),
    (dict(background="no"), TypeError, "background is True .* or False .*, got 'no'"),
    (dict(background=0), TypeError, "got 0"),
    (dict(seed="x"), TypeError, "seed is a whole number .*, got 'x'"), (dict(seed=1.5), TypeError, "got 1.5")])
def test_refining_options_of_the_wrong_type_or_value_are_refused_when_refining_starts(options, error, message):
    """Refused before anything changes: a refiner already running keeps running."""
    cv = make_cv([])
    running = cv.refine(budget=1.0, refit_every=10_000)
    with pytest.raises(error, match=message):
        cv.refine(**options)
    assert cv.refiner is running and running.active
    running.stop()


@pytest.mark.parametrize("option", ["check", "reference"])
def test_check_and_reference_given_to_refine_are_refused_as_the_code_variants_own(option):
    """refine(check=...) had failed with Python's "got multiple values for keyword argument
    'check'" and refine(reference=...) had been taken and never used, though both were listed as
    known refining options: they are the code variant's, used by tune() and refining alike."""
    cv = make_cv([])
    with pytest.raises(TypeError, match=f"{option} belong to the code variant.*code_variant\\(..., {option}=\\)"):
        cv.refine(**{option: lambda *a: True})
    assert cv.refiner is None
    with pytest.raises(TypeError, match="unknown refining options") as error:
        cv.refine(bogus=1)
    assert "check" not in str(error.value) and "reference" not in str(error.value)
