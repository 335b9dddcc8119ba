import time

import numpy as np
import pytest

from nitro.measurement import TimingPolicy, measure_variants, outputs_match, time_interleaved
from nitro.row import TrainingRow


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
    tiny = np.linspace(1e-12, 2e-12, 10)       # small outputs (SI energies): the tolerance is relative
    assert not outputs_match(np.zeros(10), tiny) and not outputs_match(-tiny, tiny)
    assert outputs_match(tiny * (1 + 1e-9), tiny) and outputs_match(np.zeros(3), np.zeros(3))
    assert outputs_match(np.array([1e6, 1e-3]), np.array([1e6, 1.5e-3]))     # relative to the largest


def test_outputs_match_compares_containers_sparse_and_pandas_item_by_item():
    """Variants returning a tuple or dict of arrays, or a SciPy sparse matrix, were failed as
    "not comparable" on every input, and the model chose the default everywhere."""
    import pandas as pd
    import scipy.sparse as sp
    a = np.arange(3.0)
    assert outputs_match((a, np.ones((2, 2))), (a + 1e-12, np.ones((2, 2))))     # shapes differ: not one array
    assert not outputs_match((a, np.ones((2, 2))), (a + 1, np.ones((2, 2))))
    assert outputs_match({"x": 1.0, "y": a}, {"x": 1.0 + 1.7e-10, "y": a})         # a float in a dict: tolerant
    assert not outputs_match({"x": 1.0}, {"z": 1.0}) and not outputs_match([a, a], [a])
    A = sp.random(50, 50, density=0.1, random_state=0, format="csr")
    assert outputs_match(A.tocoo(), A) and outputs_match(A * (1 + 1e-12), A) and not outputs_match(A * 2, A)
    assert not outputs_match(A.toarray(), A)
    df = pd.DataFrame({"a": [1.0, 2.0]})
    assert outputs_match(df.copy(), df) and not outputs_match(df.rename(columns={"a": "b"}), df)
    assert not outputs_match(pd.Series([1, 2], index=[5, 6]), pd.Series([1, 2]))
    mixed = pd.DataFrame({"key": ["x", "y", None], "total": [0.3, 1.0, np.nan]})     # a group-by's result
    assert outputs_match(mixed.assign(total=[0.1 + 0.2, 1.0, np.nan]), mixed) and outputs_match(mixed.copy(), mixed)
    assert not outputs_match(mixed.assign(key=["z", "y", None]), mixed)
    assert not outputs_match(mixed.assign(total=[0.4, 1.0, np.nan]), mixed)
    assert outputs_match([1, 2, 3], [1, 2, 3]) and outputs_match([1.0, 2.0], np.array([1.0, 2.0]))


def test_policy_validation():
    with pytest.raises(ValueError):
        TimingPolicy(min_repeats=5, max_repeats=2)
    for bad, error, match in [({"min_repeats": "3"}, TypeError, "min_repeats is a whole number"),
                              ({"warmup": 2.5}, TypeError, "warmup is a whole number"),
                              ({"max_rounds": True}, TypeError, "max_rounds is a whole number"),
                              ({"isolate": "no"}, TypeError, "isolate is True or False"),
                              ({"timeout": "60"}, TypeError, "timeout is a number of seconds or None"),
                              ({"target_seconds": -1}, ValueError, "target_seconds must be a finite number"),
                              ({"target_seconds": float("nan")}, ValueError, "target_seconds must be"),
                              ({"timeout": float("nan")}, ValueError, "timeout is a positive number of seconds "
                                                                      r"\(None or inf: no limit\), got nan"),
                              ({"timeout": -1}, ValueError, "got -1")]:
        with pytest.raises(error, match=match):
            TimingPolicy(**bad)
    assert TimingPolicy(min_repeats=np.int64(2), target_seconds=0, timeout=None).min_repeats == 2
    assert TimingPolicy(timeout=float("inf")).timeout == float("inf")      # no limit, as None


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


_FORKS_SCRIPT = r'''
import ctypes, json, os, sys
import numpy as np
from nitro import autotuner, cuda
from nitro.benchmarks import histogram_cuda
from nitro.measurement import TimingPolicy, measure_variants

forks = [0]
os.register_at_fork(before=lambda: forks.__setitem__(0, forks[0] + 1))
policy = TimingPolicy(min_repeats=1, max_repeats=1, target_seconds=0.0)   # isolate=True, the default
pids = []

def variant(x):
    pids.append(os.getpid())      # seen by this process only when the variant ran in it
    return x

def measure():
    forks[0], pids[:] = 0, []
    measure_variants({"a": variant, "b": variant}, (np.arange(3),), reference_variant="a", policy=policy)
    cv = histogram_cuda.make_code_variant()
    tuner = autotuner("histogram_cuda", policy=policy, progress=False)
    tuner.set_training_args([np.arange(300, dtype=np.uint8)], ids=["img"])
    tuner.measure(cv)
    return {"loaded": cuda.driver_loaded(), "forks": forks[0], "in_process": pids.count(os.getpid())}

before = measure()
ctypes.CDLL(sys.argv[1])
print(json.dumps({"before": before, "after": measure()}))
'''


def test_no_fork_once_the_process_has_loaded_the_cuda_driver(stand_in_cuda_driver):
    """A GPU family is measured in-process once the CUDA driver is loaded (a forked child cannot
    use CUDA): the same measurements fork before and never after, observed by a fork hook in a
    fresh Python that loads a stand-in ``libcuda.so.1`` (an empty library, named as the driver)."""
    import json
    import subprocess
    import sys
    lib = stand_in_cuda_driver
    run = subprocess.run([sys.executable, "-c", _FORKS_SCRIPT, str(lib)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["before"]["loaded"] is False and result["before"]["forks"] >= 2
    assert result["before"]["in_process"] == 0
    assert result["after"]["loaded"] is True and result["after"]["forks"] == 0
    assert result["after"]["in_process"] >= 2


def test_variants_of_one_input_are_timed_in_interleaved_rounds():
    calls = []
    variants = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    measure_variants(variants, (), policy=TimingPolicy(min_repeats=3, max_repeats=3, target_seconds=0.0,
                                                       isolate=False, max_rounds=3, min_sample=0.0))
    assert calls == ["a", "b"] + ["a", "b", "b", "a", "a", "b"]   # checks, then rounds forwards and backwards


def test_calls_too_short_to_time_alone_are_timed_in_loops():
    """A sub-microsecond call is timed as a loop of calls lasting min_sample (its time: per call);
    a call longer than min_sample is called once per sample, as before: warm-up plus rounds."""
    calls = {"a": 0, "b": 0, "slow": 0}

    def counted(name, seconds=0.0):
        def variant(x):
            calls[name] += 1
            if seconds:
                time.sleep(seconds)
            return x
        return variant

    counts = {}
    policy = TimingPolicy(min_repeats=3, max_repeats=3, target_seconds=0.0, isolate=False, max_rounds=3,
                          min_sample=1e-3)
    times, failed = measure_variants({"a": counted("a"), "b": counted("b"), "slow": counted("slow", 2e-3)}, (1,),
                                     policy=policy, counts=counts)
    assert not failed and calls["slow"] == 1 + 3
    assert calls["a"] > 100 and calls["b"] > 100 and counts["calls"] == sum(calls.values())   # < 15 us a call
    assert times["a"] < times["slow"] / 100 and times["b"] < times["slow"] / 100 and times["slow"] >= 2e-3
    with pytest.raises(ValueError, match="min_sample must be a finite number"):
        TimingPolicy(min_sample=-1.0)


def _slowing_then_steady(first_slow: int, slow: float, fast: float):
    calls = {"n": 0}

    def variant(x):
        calls["n"] += 1
        time.sleep(slow if calls["n"] <= first_slow + 1 else fast)   # +1: the untimed check
        return x
    return variant


def test_undecided_contenders_are_retimed_until_decided():
    """'a' is 2x faster but its first rounds fell in a slow period: its halves disagree, so
    the gap is not decided on the first rounds; more rounds of the two settle it."""
    variants = {"a": _slowing_then_steady(3, 0.03, 0.002), "b": lambda x: time.sleep(0.004) or x}
    policy = TimingPolicy(min_repeats=4, max_repeats=4, target_seconds=0.0, isolate=False, max_rounds=16)
    counts, verdict = {}, {}
    times, failed = measure_variants(variants, (1,), policy=policy, reference_variant="a",
                                     counts=counts, verdict=verdict)
    assert not failed and times["a"] < times["b"]
    assert verdict["status"] == "decided" and verdict["best"] == "a" and 8 <= verdict["rounds"] <= 16
    assert counts["calls"] == 2 * (1 + verdict["rounds"])   # both re-timed, in rounds


def test_retiming_stops_at_max_rounds_and_reports_undecided():
    variants = {"a": _slowing_then_steady(100, 0.003, 0.003), "b": _slowing_then_steady(2, 0.02, 0.0032)}
    policy = TimingPolicy(min_repeats=4, max_repeats=4, target_seconds=0.0, isolate=False, max_rounds=4)
    verdict = {}
    measure_variants(variants, (1,), policy=policy, reference_variant="a", verdict=verdict)
    assert verdict["status"] == "undecided" and verdict["rounds"] == 4 and set(verdict["contenders"]) == {"a", "b"}
    assert verdict["noise"] > verdict["gap"]
    with pytest.raises(ValueError, match="max_rounds"):
        TimingPolicy(max_repeats=10, max_rounds=5)


@pytest.mark.parametrize("isolate", [False, True])
def test_a_variant_that_changes_its_array_arguments_leaves_the_input_untimed(isolate):
    """A variant sorting its argument in place: every later call would see another (sorted)
    input, so nothing of that input is timed, and the reason says which variant and what to do."""
    def sorts_in_place(x):
        x.sort()
        return x.copy()

    keys = np.random.default_rng(0).random(1000)
    times, failed = measure_variants({"in_place": sorts_in_place, "copy": np.sort}, (keys.copy(),),
                                     reference_variant="in_place",
                                     policy=TimingPolicy(min_repeats=1, max_repeats=2, target_seconds=0.0, isolate=isolate))
    assert times == {"in_place": None, "copy": None}
    assert failed["in_place"].startswith("changed its array arguments in place")
    assert failed["copy"] == "not timed: 'in_place' changed its array arguments in place (give it a copy of them)"
    times, failed = measure_variants({"copy": np.sort, "again": lambda x: np.sort(x, kind="stable")}, (keys,),
                                     policy=TimingPolicy(min_repeats=1, max_repeats=2, target_seconds=0.0))
    assert not failed and all(t > 0 for t in times.values())      # variants that leave it as it is: timed
