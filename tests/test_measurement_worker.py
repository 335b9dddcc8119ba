"""Variants that crash, hang or exit measured in forked workers: each fails alone, with the
reason, and tuning goes on (real C-level segfaults, real hangs, real C++ variants)."""
import ctypes
import os
import time

import numpy as np
import pytest

from nitro import TimingPolicy, autotuner, code_variant
from nitro.benchmarks import histogram
from nitro.measurement import measure_variants

FAST = TimingPolicy(min_repeats=1, max_repeats=2, target_seconds=0.0, timeout=2.0)


def good(x):
    return x * 2


def also_good(x):
    return x + x


def wrong(x):
    return x * 2 + 1


def segfault(x):
    ctypes.string_at(0)          # reads address 0: SIGSEGV in C
    return x * 2


def hang(x):
    time.sleep(60)
    return x * 2


def exits(x):
    os._exit(3)


def raises(x):
    raise RuntimeError("bad variant")


def test_crashing_hanging_and_exiting_variants_fail_alone_with_the_reason():
    variants = {"good": good, "segfault": segfault, "wrong": wrong, "hang": hang, "exits": exits,
                "raises": raises, "also_good": also_good}
    start = time.monotonic()
    times, failed = measure_variants(variants, (np.arange(10),), reference_variant="good", policy=FAST)
    assert time.monotonic() - start < 10          # the hang cost its timeout, not 60 s
    assert failed == {"segfault": "killed by SIGSEGV", "hang": "timed out after 2 s",
                      "exits": "worker exited with code 3", "wrong": "wrong result",
                      "raises": "raised RuntimeError: bad variant"}
    assert times["good"] > 0 and times["also_good"] > 0
    assert [v for v, t in times.items() if t is not None] == ["good", "also_good"]


def test_reference_is_rebuilt_after_a_crash():
    # "good" gives the reference in the first worker; after the segfault a second worker
    # must re-run it to tell that "wrong" is wrong and "also_good" is right
    times, failed = measure_variants({"segfault": segfault, "good": good, "wrong": wrong,
                                      "also_good": also_good}, (np.arange(4),), policy=FAST)
    assert failed == {"segfault": "killed by SIGSEGV", "wrong": "wrong result"}
    assert times["good"] > 0 and times["also_good"] > 0


def test_isolated_and_in_process_agree_on_ordinary_variants():
    variants = {"good": good, "wrong": wrong, "raises": raises, "also_good": also_good}
    args = (np.arange(6),)
    isolated = measure_variants(variants, args, reference=np.arange(6) * 2, policy=FAST)
    inline = measure_variants(variants, args, reference=np.arange(6) * 2,
                              policy=TimingPolicy(min_repeats=1, max_repeats=2, isolate=False))
    assert isolated[1] == inline[1]
    assert {v for v, t in isolated[0].items() if t} == {v for v, t in inline[0].items() if t}


def test_policy_rejects_a_bad_timeout():
    with pytest.raises(ValueError, match="timeout"):
        TimingPolicy(timeout=0)


def test_tuning_continues_past_a_segfaulting_cpp_family(store):
    (train, ids), _ = histogram.train_test_inputs(8, 1, seed=2)
    variants = {**histogram.VARIANTS, "segfault": segfault}
    cv = code_variant("histogram-crash", variants, histogram.FEATURES, default="shared_atomic_even",
                      reference=histogram.reference)
    cv.record, cv.device_id = True, "dev"
    tuner = autotuner("histogram-crash", store=store, policy=FAST, progress=False)
    tuner.set_training_args(train, ids=ids)
    [model] = tuner.tune([cv])
    rows = store.rows("histogram-crash", "dev")
    assert len(rows) == len(ids)
    for r in rows:
        assert r.failed["segfault"] == "killed by SIGSEGV" and r.times["segfault"] is None
        assert all(r.times[v] > 0 for v in histogram.VARIANT_NAMES if v not in r.failed)
        assert r.best in histogram.VARIANT_NAMES
    assert set(model.variants) <= set(histogram.VARIANT_NAMES)


def test_isolation_overhead_per_variant_is_small():
    """The docstring's claim: a fork per input costs a few milliseconds."""
    variants = {f"v{i}": good for i in range(6)}
    args = (np.arange(4),)
    policy = TimingPolicy(min_repeats=1, max_repeats=1, target_seconds=0.0)
    n = 20
    start = time.perf_counter()
    for _ in range(n):
        measure_variants(variants, args, reference_variant="v0", policy=policy)
    isolated = (time.perf_counter() - start) / n
    inline_policy = TimingPolicy(min_repeats=1, max_repeats=1, target_seconds=0.0, isolate=False)
    start = time.perf_counter()
    for _ in range(n):
        measure_variants(variants, args, reference_variant="v0", policy=inline_policy)
    inline = (time.perf_counter() - start) / n
    per_variant = (isolated - inline) / len(variants)
    print(f"isolation overhead: {1e3 * (isolated - inline):.2f} ms per input, "
          f"{1e3 * per_variant:.2f} ms per variant")
    assert per_variant < 0.05     # generous bound on a shared, loaded machine


def test_a_crash_in_the_timed_rounds_fails_the_variant_that_was_running():
    calls = {"n": 0}

    def crashes_later(x):          # passes its check, then segfaults on its second timed call
        calls["n"] += 1
        if calls["n"] == 3:
            ctypes.string_at(0)
        return x * 2

    policy = TimingPolicy(min_repeats=3, max_repeats=3, target_seconds=0.0, timeout=2.0)
    counts, verdict = {}, {}
    times, failed = measure_variants({"good": good, "crashes_later": crashes_later, "also_good": also_good},
                                     (np.arange(5),), reference_variant="good", policy=policy,
                                     counts=counts, verdict=verdict)
    assert failed == {"crashes_later": "killed by SIGSEGV"}
    assert times["crashes_later"] is None and times["good"] > 0 and times["also_good"] > 0
    assert verdict["best"] in ("good", "also_good")
    # first worker: 3 checks + a round and a half; second: 2 checks + 3 rounds of 2
    assert counts["calls"] >= 3 + 2 + 2 * 3
