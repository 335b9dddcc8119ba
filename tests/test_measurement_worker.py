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


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sys_exit_or_keyboard_interrupt_in_a_variant_fails_it_alone():
    def calls_exit(x):
        raise SystemExit(3)

    def interrupts(x):
        raise KeyboardInterrupt

    times, failed = measure_variants({"good": good, "calls_exit": calls_exit, "interrupts": interrupts,
                                      "also_good": also_good}, (3,), reference_variant="good", policy=FAST)
    assert times["good"] is not None and times["also_good"] is not None
    assert "SystemExit(3): a variant must not end the process" in failed["calls_exit"]
    assert "KeyboardInterrupt" in failed["interrupts"]


WORKER_SCRIPT = """
import os, signal, subprocess, sys, threading, time
from nitro import TimingPolicy
from nitro.measurement import measure_variants
mark = sys.argv[1]

def spawns_and_hangs(x):
    child = subprocess.Popen(["sleep", "300"])
    with open(mark, "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    while True:
        pass

def good(x):
    return x
if sys.argv[2] == "interrupt":       # Ctrl-C in the tuner while the worker spins
    threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    out = measure_variants({"good": good, "spins": spawns_and_hangs}, (1,), reference_variant="good",
                           policy=TimingPolicy(min_repeats=1, max_repeats=1, target_seconds=0.0,
                                               timeout=float(sys.argv[3])))
    print("failed:", out[1].get("spins"))
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.parametrize("how, timeout, said", [("timeout", "2", "failed: timed out after 2 s"),
                                                ("interrupt", "120", "interrupted"),
                                                ("parent killed", "120", None)])
def test_no_worker_nor_what_its_variant_started_outlives_a_timeout_an_interrupt_or_the_tuner(tmp_path, how,
                                                                                              timeout, said):
    import signal
    import subprocess
    import sys
    mark = tmp_path / "pids"
    log = tmp_path / "out.txt"                 # a file: a pipe would stay open while `sleep` holds it
    with open(log, "w") as stdout:
        tuner = subprocess.Popen([sys.executable, "-c", WORKER_SCRIPT, str(mark), how, timeout], stdout=stdout)
    deadline = time.monotonic() + 60
    while not (mark.exists() and len(mark.read_text().split()) == 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    worker, started = map(int, mark.read_text().split())
    if how == "parent killed":
        tuner.send_signal(signal.SIGKILL)
    tuner.wait(60)
    if said is not None:
        assert said in log.read_text()
    deadline = time.monotonic() + 10
    while (_alive(worker) or _alive(started)) and time.monotonic() < deadline:
        time.sleep(0.05)
    leftover = [pid for pid in (worker, started) if _alive(pid)]
    for pid in leftover:                # never leave a spinning worker behind, even when failing
        os.kill(pid, signal.SIGKILL)
    assert not _alive(worker), f"the worker outlived the tuner ({how})"
    if how != "parent killed":          # the kernel ends the worker alone when the tuner dies
        assert not _alive(started), f"the variant's own process outlived the worker ({how})"
