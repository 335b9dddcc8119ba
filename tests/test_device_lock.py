"""Two processes timing on one device take turns: a real second process holds the device's lock
while a real tuner measures, and the tuner's first variant call comes after the lock is let go."""
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from nitro import CodeVariant, autotuner
from nitro.device_lock import DeviceBusyWarning, lock_path, timing_on
from nitro.measurement import TimingPolicy
from nitro.store import Store

ROOT = Path(__file__).resolve().parents[1]
FAST = dict(min_repeats=1, max_repeats=2, target_seconds=0.0, isolate=False)

HOLDER = """
import sys, time
from nitro.device_lock import timing_on
with timing_on(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    print(time.monotonic(), flush=True)
"""


def _code_variant(device, calls):
    def square(x):
        calls.append(time.monotonic())
        return x * x
    cv = CodeVariant("locked", {"a": square, "b": lambda x: x ** 2}, {"x": lambda x: float(x)})
    cv.device_id, cv.record = device, False
    return cv


@pytest.fixture
def store(embedded_redis):
    embedded_redis.flushall()        # another test's keys (a store's schema version among them) are not ours
    yield Store(client=embedded_redis)
    embedded_redis.flushall()


def _holding(device, seconds):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, device, str(seconds)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_tuner_waits_for_the_process_timing_on_its_device(store):
    device = f"dev-{uuid.uuid4().hex}"
    calls = []
    tuner = autotuner("locked", store=store, policy=TimingPolicy(**FAST), progress=False)
    tuner.set_training_args([3.0, 4.0])
    holder = _holding(device, 1.0)
    try:
        with pytest.warns(DeviceBusyWarning, match=f"pid {holder.pid}.*timing variants on {device}"):
            rows = tuner.measure(_code_variant(device, calls))
        released = float(holder.stdout.readline())
    finally:
        holder.wait(30)
    assert len(rows) == 2 and calls and min(calls) >= released


def test_exclusive_false_and_other_devices_do_not_wait(store, recwarn):
    device = f"dev-{uuid.uuid4().hex}"
    holder = _holding(device, 30.0)
    try:
        for policy, dev in ((TimingPolicy(**FAST, exclusive=False), device), (TimingPolicy(**FAST), device + "-other")):
            calls = []
            tuner = autotuner("locked", store=store, policy=policy, progress=False)
            tuner.set_training_args([3.0])
            assert len(tuner.measure(_code_variant(dev, calls))) == 1 and calls
        assert holder.poll() is None, "the holder ended before the check"
    finally:
        holder.kill()
        holder.wait(30)
    assert not [w for w in recwarn if issubclass(w.category, DeviceBusyWarning)]


def test_the_lock_is_reentrant_per_thread_and_named_per_device():
    device = f"dev-{uuid.uuid4().hex}"
    with timing_on(device):
        with timing_on(device):      # a nested measurement of this thread does not wait on itself
            pass
    assert lock_path("a/b") != lock_path("a_b") and lock_path("x").parent == lock_path("y").parent
    with pytest.raises(TypeError, match="exclusive is True or False"):
        TimingPolicy(exclusive="yes")


def test_a_process_says_once_that_it_waits_even_when_warning_filters_change():
    """Python's once-per-place rule forgets whenever a filter changes (any catch_warnings does):
    the second wait, for another holder, says nothing."""
    import warnings
    device = f"dev-{uuid.uuid4().hex}"
    said = []
    for seconds in (0.5, 0.5):
        holder = _holding(device, seconds)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("default")
                with timing_on(device):
                    pass
            said += [w for w in caught if issubclass(w.category, DeviceBusyWarning)]
        finally:
            holder.wait(30)
            holder.stdout.close()
    assert len(said) == 1 and f"timing variants on {device}" in str(said[0].message)
    assert said[0].filename == __file__      # points at the caller of timing_on


def test_threads_of_one_process_take_turns_and_the_warning_says_so(held_in_thread):
    """Two threads timing one device each open the lock file, so they take turns like two
    processes; the waiting one is told it waits for a thread of its own process."""
    device = f"dev-{uuid.uuid4().hex}"
    with held_in_thread(lambda: timing_on(device), release_after=0.5) as released:
        with pytest.warns(DeviceBusyWarning, match="another thread of this process is timing"):
            with timing_on(device):
                assert released.is_set()


def test_a_pool_made_while_timing_does_not_keep_the_device():
    """Before 2026-11-28 a variant's multiprocessing pool (forked) made during a timing kept the
    device's lock after it: the next timing of the same process waited for itself forever,
    told that another thread of its own process was timing."""
    import multiprocessing
    import threading
    device = f"dev-{uuid.uuid4().hex}"
    with timing_on(device):
        pool = multiprocessing.get_context("fork").Pool(1)    # made lazily by a variant, kept for its later calls
        assert pool.apply(abs, (-1,)) == 1
    try:
        entered = threading.Event()

        def again():
            with timing_on(device):
                entered.set()
        threading.Thread(target=again, daemon=True).start()
        assert entered.wait(30), "the pool's worker kept the device's lock"
    finally:
        pool.terminate()
        pool.join()
