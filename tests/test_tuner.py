import multiprocessing
import time

import numpy as np
import pytest

from nitro import TimingPolicy, autotuner, code_variant, devices
from nitro.benchmarks import histogram
from nitro.model import SelectorModel

FAST = TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0)


def test_tune_records_trains_and_dispatches(store):
    (train, ids), (test, _) = histogram.train_test_inputs(14, 7, seed=5)
    hist = histogram.make_code_variant()
    hist.record, hist.device_id = True, "test_cpu"
    tuner = autotuner("histogram", store=store, policy=FAST, progress=False)
    tuner.set_training_args(train, ids=ids)
    [model] = tuner.tune([hist])
    rows = store.rows("histogram", "test_cpu")
    assert sorted(r.input_id for r in rows) == sorted(ids)
    assert all(r.best in histogram.VARIANT_NAMES for r in rows)
    assert store.device("test_cpu")["cores"]["source"] == "query"
    assert store.device_metadata("test_cpu") == devices.local_metadata("test_cpu")      # kind, vendor, family
    again = histogram.make_code_variant()
    again.model = SelectorModel.from_dict(store.model("histogram", "test_cpu"))
    for img in test:
        assert again.select(img) == hist.select(img)
        assert np.array_equal(hist(img), histogram.reference(img))


def test_tuning_resumes_without_remeasuring(store):
    calls = multiprocessing.get_context("fork").Value("i", 0)   # variants run in forked workers

    def a(x):
        with calls.get_lock():
            calls.value += 1
        return x + 1

    def b(x):
        with calls.get_lock():
            calls.value += 1
        return x + 1

    cv = code_variant("inc", [a, b], {"x": lambda x: float(x)})
    cv.record, cv.device_id = True, "dev"
    once_a_sample = TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0, min_sample=0.0)
    tuner = autotuner("inc", store=store, policy=once_a_sample, progress=False)
    tuner.set_training_args([1, 2, 3])
    tuner.tune([cv])
    first = calls.value
    tuner.set_training_args([1, 2, 3, 4])
    tuner.tune([cv])
    assert 0 < calls.value - first < first / 2          # only input 4 was measured
    assert len(store.rows("inc", "dev")) == 4
    assert tuner.timing_report["inc"]["n_inputs"] == 1
    again = autotuner("inc", store=store, policy=once_a_sample, progress=False)
    again.set_training_args([1, 2, 3, 4])
    again.tune([cv])                                    # nothing measured: the report of the run that measured
    assert again.timing_report["inc"]["n_inputs"] == 1
    assert store.model("inc", "dev")["provenance"]["timing"]["n_inputs"] == 1


def test_tune_replaces_a_stored_model_that_does_not_load(store):
    from nitro.store import keys
    cv = code_variant("inc2", {"one": lambda x: x + 1, "other": lambda x: 1 + x}, {"x": lambda x: float(x)})
    cv.record, cv.device_id = True, "dev"
    tuner = autotuner("inc2", store=store, policy=TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0,
                                                               min_sample=0.0), progress=False)
    tuner.set_training_args([1, 2, 3])
    tuner.tune([cv])
    store.client.set(keys.model("inc2", "dev"), '{"kind": "svc", "version": 0}')     # an older run's
    tuner.tune([cv])                    # resumed: nothing to measure, the stored model read for its report
    assert SelectorModel.from_dict(store.model("inc2", "dev")).variants


def test_bad_training_inputs_are_named():
    cv = code_variant("inc", {"a": lambda x: x}, {"x": lambda x: float(x)})
    tuner = autotuner("inc", policy=FAST, progress=False)
    with pytest.raises(ValueError, match="no training inputs"):
        tuner.set_training_args([])
    with pytest.raises(ValueError, match="not unique"):
        tuner.set_training_args([1, 1])
    with pytest.raises(ValueError, match="input 1 has an empty id"):
        tuner.set_training_args([1, 2], ids=["a", ""])
    with pytest.raises(ValueError, match="set_training_args before"):
        tuner.tune([cv])
    tuner.set_training_args([float("inf")])
    with pytest.raises(ValueError, match="must be finite"):
        tuner.tune([cv])
    with pytest.raises(TypeError, match=r"tune takes a list of code variants \(tune\(\[cv\]\)\)"):
        tuner.tune(cv)
    with pytest.raises(ValueError, match="featureless: no input features: a model learns its choice from them"):
        tuner.tune([code_variant("featureless", {"a": lambda x: x, "b": lambda x: x})])


def test_bad_autotuner_arguments_are_refused_when_given():
    for bad, match in [({"policy": "fast"}, "policy is a nitro.measurement.TimingPolicy"),
                       ({"learner": 3}, "learner is a selector name or an estimator"),
                       ({"store": 3}, "store is a Store, a Redis URL or None")]:
        with pytest.raises(TypeError, match=match):
            autotuner("inc", **bad)
    with pytest.raises(ValueError, match="non-empty name"):
        autotuner("")


def test_all_variants_failing_is_an_error():
    def boom(x):
        raise RuntimeError("no")
    cv = code_variant("f", [boom], {"x": lambda x: float(x)})
    tuner = autotuner("f", policy=FAST, progress=False)
    tuner.set_training_args([1, 2])
    with pytest.raises(ValueError, match="no training input has a valid variant"):
        tuner.tune([cv])


def test_tune_reports_inputs_too_noisy_to_decide_and_warns(store):
    """Both variants get slower call after call (1 ms per call of an input), so the fastest
    samples of the two halves of each variant's samples disagree more with every round, while the
    two stay within 0.2 ms of each other: no input can be decided however many rounds, whatever
    the warm-up calls or a preempted sample, and tune() says so. (A drift that settles, such as
    getting faster towards a floor, is decided in the end.)"""
    from nitro.noise import NoisyMachineWarning

    calls = {}

    def slowing(name, base):
        def fn(x):          # counts its calls per input: measured in-process or in a worker alike
            calls[name, x] = calls.get((name, x), 0) + 1
            time.sleep(base + 0.001 * calls[name, x])
            return x
        return fn

    cv = code_variant("drift", {"a": slowing("a", 0.004), "b": slowing("b", 0.0042)}, {"x": lambda x: float(x)})
    cv.record, cv.device_id = True, "dev"
    tuner = autotuner("drift", store=store, progress=False,
                      policy=TimingPolicy(min_repeats=4, max_repeats=4, target_seconds=0.0, max_rounds=8))
    tuner.set_training_args([1, 2, 3, 4])
    with pytest.warns(NoisyMachineWarning, match="4 of 4 inputs stayed undecided"):
        [model] = tuner.tune([cv])
    report = tuner.timing_report["drift"]
    assert report["undecided"] == 4 and report["too_noisy"] and report["undecided_median_noise"] > 0
    assert model.provenance["timing"] == report
    assert all(v["status"] == "undecided" and v["rounds"] == 8 for v in tuner.verdicts["drift"].values())
    # nothing measured now (the rows are recorded): the warning says whose timings it judges
    with pytest.warns(NoisyMachineWarning, match=r"drift: timings read back from an earlier run \(none measured "
                                                 r"now\): timing: 0 inputs decided, 0 ties, 4 undecided of 4"):
        tuner.tune([cv])


def test_a_broken_default_that_every_other_variant_disagrees_with_is_warned_of():
    """Without ``reference=``, results are checked against the first variant run: a broken one
    marks every correct variant 'wrong result' and wins every input. One warning says so."""
    def broken(x):
        return None

    def good(x):
        return x + 1

    def also_good(x):
        return x + 1

    tuner = autotuner("brokendefault", policy=FAST, progress=False)
    tuner.set_training_args([1.0, 2.0, 3.0])
    cv = code_variant("brokendefault", [broken, good, also_good], {"x": lambda x: float(x)})
    with pytest.warns(UserWarning, match="on all 3 inputs every other variant's result differed from that of "
                                         "'broken', the variant they were checked against: is it right"):
        tuner.tune([cv])
    fixed = code_variant("brokendefault", [broken, good, also_good], {"x": lambda x: float(x)},
                         reference=lambda x: x + 1)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        tuner.tune([fixed])
    assert {r.best for r in tuner.training_rows["brokendefault"]} <= {"good", "also_good"}
    assert all(r.failed["broken"].startswith("wrong result (not comparable with the reference: TypeError")
               for r in tuner.training_rows["brokendefault"])        # None against a number: no crash


def test_a_check_that_raises_on_every_comparison_is_named_not_the_variant_checked_against():
    """A check= that raises counts every compared variant wrong, so the first variant run wins
    everywhere; the warning had blamed that variant ("is it right?") where the check is at fault."""
    def a(x):
        return x + 1

    def b(x):
        return x + 1

    def check(result, expected):
        raise KeyError("tolerance")

    tuner = autotuner("badcheck", policy=FAST, progress=False)
    tuner.set_training_args([1.0, 2.0, 3.0])
    cv = code_variant("badcheck", [a, b], {"x": lambda x: float(x)}, check=check)
    with pytest.warns(UserWarning, match=r"badcheck: the check \(code_variant\(\.\.\., check=\)\) raised on every "
                                         r"comparison, so every variant but 'a'.*is the check right\? "
                                         r"\(KeyError: 'tolerance'\)$") as caught:
        tuner.tune([cv])
    assert not any("is it right?" in str(w.message) for w in caught)


def test_a_variant_wrong_on_some_inputs_yet_chosen_is_warned_of():
    """'quick' is fast but wrong on every third input: never labelled best there, yet the model
    learns to choose it on inputs like the others; tune() says so and points to constraints. A
    constraint excluding it where it is wrong silences the warning."""
    def quick(x):
        return x + (1 if x % 3 else 2)

    def careful(x):
        time.sleep(0.002)
        return x + 1

    tuner = autotuner("wrongsome", policy=FAST, progress=False)
    tuner.set_training_args([float(i) for i in range(1, 25)])
    cv = code_variant("wrongsome", [quick, careful], {"x": lambda x: float(x)}, reference=lambda x: x + 1)
    with pytest.warns(UserWarning, match=r"variant 'quick' failed on 8 of 24 training inputs \(wrong result; e.g. .*"
                                         r"yet the model chooses it on \d+ training inputs.*cv.add_constraint\('quick'"):
        tuner.tune([cv])

    def risky(x):                   # fast, but raises on every third input: chosen there, it raises in use
        if x % 3 == 0:
            raise MemoryError("too big")
        return x + 1

    raising = code_variant("raisesome", [risky, careful], {"x": lambda x: float(x)}, reference=lambda x: x + 1)
    with pytest.warns(UserWarning, match=r"variant 'risky' failed on 8 of 24 training inputs \(raised MemoryError"):
        t2 = autotuner("raisesome", policy=FAST, progress=False)
        t2.set_training_args([float(i) for i in range(1, 25)])
        t2.tune([raising])
    cv.add_constraint("quick", lambda f: f["x"] % 3 != 0)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        tuner.tune([cv])

    class TooBig(MemoryError):      # a subclass of the type fallback_on names
        pass

    def risky_sub(x):
        if x % 3 == 0:
            raise TooBig("too big")
        return x + 1

    for v, default in ((risky, "careful"), (risky_sub, "careful")):   # dispatch runs careful after risky raises
        caught = code_variant("caughtsome", [v, careful], {"x": lambda x: float(x)}, reference=lambda x: x + 1,
                              default=default, fallback_on=(MemoryError,))
        t3 = autotuner("caughtsome", policy=FAST, progress=False)
        t3.set_training_args([float(i) for i in range(1, 25)])
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            t3.tune([caught])
        assert sum(r.failed.get(v.__name__, "").startswith("raised ") for r in t3.training_rows["caughtsome"]) == 8
    own_default = code_variant("defaultsome", [risky, careful], {"x": lambda x: float(x)},
                               reference=lambda x: x + 1, default="risky", fallback_on=(MemoryError,))
    with pytest.warns(UserWarning, match=r"variant 'risky' failed on 8 of 24 training inputs"):
        t4 = autotuner("defaultsome", policy=FAST, progress=False)     # the default has nothing to fall back to
        t4.set_training_args([float(i) for i in range(1, 25)])
        t4.tune([own_default])


@pytest.mark.parametrize("learner", ["tree", "regression", "threshold"])
def test_active_learning_works_with_the_time_learners_too(learner):
    """tune(budget=...) ranked the pool by decision_function, which only the classifiers have."""
    def slow_small(x):
        return sum(range(int(x)))

    def closed_form(x):
        return int(x) * (int(x) - 1) // 2

    cv = code_variant(f"budget-{learner}", [slow_small, closed_form], {"x": lambda x: float(x)})
    cv.record = False
    tuner = autotuner(f"budget-{learner}", policy=FAST, learner=learner, progress=False)
    tuner.set_training_args([float(i) for i in range(1, 400, 10)])
    model, = tuner.tune([cv], budget=0.5)
    assert len(tuner.training_rows[f"budget-{learner}"]) <= 20 and model.variants


def test_a_budget_above_the_training_inputs_says_all_are_measured():
    """tune(budget=50) on 12 inputs measured all 12 without a word; a budget within them says nothing."""
    import warnings

    def slow_small(x):
        return sum(range(int(x)))

    def closed_form(x):
        return int(x) * (int(x) - 1) // 2

    cv = code_variant("budget-over", [slow_small, closed_form], {"x": lambda x: float(x)})
    cv.record = False
    tuner = autotuner("budget-over", policy=FAST, progress=False)
    tuner.set_training_args([float(i) for i in range(1, 120, 10)])
    with pytest.warns(UserWarning, match="budget-over: a budget of 50 inputs, but there are 12 training inputs: "
                                         "all 12 are measured"):
        tuner.tune([cv], budget=50)
    assert len(tuner.training_rows["budget-over"]) == 12
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*a budget of")
        tuner.tune([cv], budget=12)
        tuner.tune([cv], budget=1.0)        # a fraction is of the inputs there are: nothing more asked for


def test_a_resumed_tune_reads_the_recorded_rows_under_the_constraints_as_they_stand_now():
    def loop(x):                     # the fastest, where it may run
        return x + 1

    def slow(x):
        time.sleep(0.001)
        return x + 1

    cv = code_variant("constrained-resume", [loop, slow], {"x": lambda x: float(x)}, default="slow")
    cv.add_constraint("loop", lambda f: f["x"] < 15)
    cv.record = True                                           # resumed from the store
    tuner = autotuner("constrained-resume", policy=FAST, progress=False)
    tuner.set_training_args([float(i) for i in range(1, 21)])
    tuner.tune([cv])
    rows = {r.input_id: r for r in tuner.training_rows[cv.name]}
    assert sum(r.failed.get("loop") == "excluded by constraint" for r in rows.values()) == 6
    cv.add_constraint("loop", lambda f: f["x"] < 5)          # tightened: the stored times of loop on
    calls = tuner.counts["calls"]                              # 5..14 are no longer learned
    tuner.tune([cv])
    assert tuner.counts["calls"] == calls                      # nothing measured again
    learned = [r for r in tuner.training_rows[cv.name] if r.features["x"] >= 5]
    assert all(r.best == "slow" and r.failed["loop"] == "excluded by constraint" for r in learned)
    cv.constraints.clear()                                     # loosened: the inputs it was kept from
    tuner.tune([cv])                                           # are measured again, whole
    assert tuner.counts["calls"] > calls
    assert all(r.times["loop"] is not None for r in tuner.training_rows[cv.name])


def test_a_default_that_fails_where_the_others_disagree_is_warned_of():
    """Without reference=, the others are checked against the default's output; where the default
    times out, the first variant that ran instead stands in, and a wrong one was labelled best."""
    def careful(x):
        if x > 10:
            raise RuntimeError("gives up on large inputs")
        return x + 1

    def wrong_big(x):
        return x + (1 if x <= 10 else 2)

    def right(x):
        return x + 1

    cv = code_variant("stand-in", [careful, wrong_big, right], {"x": lambda x: float(x)}, default="careful")
    tuner = autotuner("stand-in", policy=FAST, progress=False)
    tuner.set_training_args([float(i) for i in range(1, 16)])
    with pytest.warns(UserWarning, match=r"on 5 inputs .* the default variant 'careful' failed, and the others"):
        tuner.tune([cv])


def test_input_ids_are_the_same_for_numpy_and_python_numbers_and_object_arrays_need_ids():
    from nitro.tuner import input_id
    assert input_id((np.float64(1.0), np.int64(3))) == input_id((1.0, 3))     # a resume measures nothing again
    assert input_id((np.arange(3.0),)) != input_id((np.arange(3),))            # an array's dtype still counts
    with pytest.raises(TypeError, match="array of Python objects: pass ids="):
        input_id((np.array(["a", None], dtype=object),))


def test_tune_refuses_an_early_stopping_that_is_not_one():
    cv = code_variant("es_arg", {"a": lambda x: x, "b": lambda x: x}, {"x": lambda x: float(x)})
    tuner = autotuner("es_arg", progress=False)
    tuner.set_training_args([1, 2])
    for bad in (0.5, True):
        with pytest.raises(TypeError, match=r"early_stopping is a nitro.search.EarlyStopping.*got " + repr(bad)):
            tuner.tune([cv], early_stopping=bad)
    assert tuner.counts["calls"] == 0                # refused before measuring


def test_noisy_report_of_an_early_stopping_tune_advises_max_repeats():
    """The advice of a noisy early-stopping tune() named TimingPolicy(max_rounds=...), which its
    re-timing (capped at max_repeats) ignores. Variant a's timed samples alternate 3 ms and 1 ms
    (a noise of 200%), b takes 1.5 ms: the input stays undecided."""
    from nitro.search import EarlyStopping
    calls = {"a": 0}

    def a(x):
        calls["a"] += 1
        time.sleep(0.003 if calls["a"] % 2 == 0 else 0.001)
        return x

    def b(x):
        time.sleep(0.0015)
        return x
    cv = code_variant("es_noisy", {"a": a, "b": b}, {"x": lambda x: float(x)})
    policy = TimingPolicy(min_repeats=2, max_repeats=2, target_seconds=0.0, isolate=False, exclusive=False)
    tuner = autotuner("es_noisy", policy=policy, progress=False)
    tuner.set_training_args([1])
    with pytest.warns(UserWarning, match="max_repeats"):
        tuner.tune([cv], early_stopping=EarlyStopping(exhaustive_inputs=5))
    report = tuner.timing_report["es_noisy"]
    assert report["undecided"] == 1 and "TimingPolicy(max_repeats=...)" in report["advice"], report


def test_repeated_training_inputs_are_named_by_position():
    """Inputs that were not unique were refused with no word of which ones: in 48 images, the user
    had to hunt for the copy."""
    tuner = autotuner("dup", progress=False)
    with pytest.raises(ValueError, match=r"1 repeated: inputs 0 and 2 have id .*drop the copy, or give ids="):
        tuner.set_training_args([np.arange(3), np.arange(4), np.arange(3)])
    with pytest.raises(ValueError, match=r"2 repeated: inputs 0 and 1 have id 'a'; inputs 0 and 3 have id 'a'.*"
                                         "an id of its own"):
        tuner.set_training_args([1, 2, 3, 4], ids=["a", "a", "b", "a"])


def test_a_reference_that_raises_is_named_with_its_input():
    """A reference that raised reached the user bare (a ZeroDivisionError from tune(), no word of
    the reference or the input); its type is kept and a note names both."""
    def broken(x):
        return 1 / 0
    cv = code_variant("ref_raises", {"a": lambda x: x, "b": lambda x: x}, {"x": lambda x: float(x)}, reference=broken)
    tuner = autotuner("ref_raises", progress=False)
    tuner.set_training_args([3], ids=["three"])
    with pytest.raises(ZeroDivisionError) as caught:
        tuner.tune([cv])
    assert "(raised in the reference of code variant 'ref_raises', on input three)" in caught.value.__notes__
