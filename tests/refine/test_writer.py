"""Refining mode's store writer: rows reach a real store in the background, merged over the stored
ones, without blocking calls when the store is unreachable or paused, and at stop and exit."""
import os
import socket

from nitro.row import TrainingRow
from nitro.refine import feature_id

from tests.refine.helpers import VARIANTS, ROOT, make_cv, XS


def test_rows_reach_a_real_store_in_the_background(store):
    ran = []
    cv = make_cv(ran, name="refined-rows")
    refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0, refit_every=10_000)
    for x in XS[:40]:
        cv(float(x))
    assert refiner.wait(30)
    stats = refiner.stop()
    rows = {r.input_id: r for r in store.rows("refined-rows", "here")}
    assert stats["rows_written"] == stats["rows_recorded"] > 0 and stats["store_errors"] == 0
    assert len(rows) == stats["target_inputs"]
    for r in rows.values():
        assert r.input_id == feature_id([r.features["x"]])
        timed = [v for v, t in r.times.items() if t is not None]
        assert len(timed) >= 2 and all(r.times[v] >= 0 for v in timed)
        assert set(r.times) <= set(VARIANTS)


def test_rows_are_written_over_the_stored_ones_keeping_what_others_timed(store):
    # another process (or this one before a restart) stored a time or a failure for each input
    store.declare("refined-merge", VARIANTS, ["x"])
    store.put_rows("refined-merge", "here", [TrainingRow(feature_id([float(x)]), {"x": float(x)},
                                                         {"a": None, "b": None, "c": 123.0}, {"a": "wrong result"})
                                             for x in XS[:40]])
    ran = []
    cv = make_cv(ran, name="refined-merge")
    refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0,
                        refit_every=10_000, candidates=2)
    for x in XS[:40]:
        cv(float(x))
    assert refiner.wait(30)
    assert refiner.stop()["rows_written"] > 0
    for r in store.rows("refined-merge", "here"):
        new = [v for v, t in r.times.items() if t is not None and t != 123.0]
        assert new, r                                   # this process's times are written
        assert r.times["c"] == 123.0 or "c" in new      # the stored ones it did not time are kept
        assert r.failed.get("a") == "wrong result" or "a" in new


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_store_never_breaks_a_call():
    ran = []
    cv = make_cv(ran, name="refined-unreachable")
    refiner = cv.refine(store=f"redis://127.0.0.1:{_closed_port()}/0", device_id="here", budget=1.0, time_budget=None,
                        quantile=1.0, refit_every=10_000)
    results = [cv(float(x)) for x in XS[:30]]
    assert results == [cv.select(float(x)) for x in XS[:30]]
    assert refiner.wait(30)
    s = refiner.stop()
    assert s["store_errors"] == s["rows_recorded"] > 0 and s["rows_written"] == 0
    assert "does not answer" in s["last_store_error"]


def test_a_paused_store_drops_rows_instead_of_blocking_calls(embedded_redis):
    """CLIENT PAUSE stalls every command of the server: the writer thread waits, the bounded
    queue fills, and calls go on (rows are counted as dropped)."""
    from nitro.store import Store
    embedded_redis.flushall()
    store = Store(client=embedded_redis)
    ran = []
    cv = make_cv(ran, name="refined-paused")
    refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0, queue_size=1, refit_every=10_000)
    cv(float(XS[0]))
    assert refiner.wait(30)
    embedded_redis.execute_command("CLIENT", "PAUSE", 3000)
    for x in XS[1:60]:
        cv(float(x))
    s = refiner.stats()
    assert s["rows_dropped"] > 0 and s["explored"] >= 50
    assert refiner.wait(30)
    assert refiner.stop()["rows_written"] >= 2


def test_stop_writes_what_it_can_within_its_timeout_and_its_writer_ends(store):
    """With the store paused, stop() returns within its timeout, the rows it could not write are
    counted as dropped, and the writer thread ends once the store is back."""
    ran = []
    cv = make_cv(ran, name="stop-paused")
    refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0,
                        refit_every=10_000, queue_size=2)
    for x in XS[:4]:
        cv(float(x))
    assert refiner.wait(30)
    store.client.execute_command("CLIENT", "PAUSE", 1500, "ALL")     # every client waits, the writer too
    for x in XS[4:60]:
        cv(float(x))
    s = refiner.stop(timeout=0.2)
    in_flight = s["rows_recorded"] - (s["rows_written"] + s["rows_dropped"] + s["store_errors"] + s["queued"])
    assert in_flight in (0, 1)                          # the row the writer is waiting to write
    writer = [t for t in refiner._threads if t.name.startswith("nitro-refine-store")][0]
    writer.join(30)
    assert not writer.is_alive()
    s = refiner.stats()
    assert s["queued"] == 0 and s["rows_dropped"] > 0
    assert s["rows_recorded"] == s["rows_written"] + s["rows_dropped"] + s["store_errors"]


def test_rows_queued_at_exit_are_written_and_a_computation_lost_by_the_store_is_declared_again(tmp_path):
    """A script that refines and ends without stop(): its queued rows reach the store (before,
    they went with the writer's daemon thread). The store removed the computation under it
    once: the writer declares it again."""
    import subprocess
    import sys
    script = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import numpy as np
from tests.refine.helpers import make_cv
from nitro.store import Store
store = Store()
cv = make_cv([], name="at-exit")
refiner = cv.refine(store=store, device_id="here", budget=1.0, time_budget=None, quantile=1.0, warmup=10**6,
                    refit_every=10**6, queue_size=100_000)
for x in np.linspace(0.0, 5.0, 50):
    cv(float(x))
assert refiner.wait(30)
store.drop_computation("at-exit")            # gone under the writer
for x in np.linspace(5.01, 9.0, 400):
    cv(float(x))
print(refiner.stats()["rows_recorded"])
"""
    env = {**os.environ, "NITRO_DATA_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    recorded = int(out.stdout.split()[-1])
    check = subprocess.run([sys.executable, "-c", "from nitro.store import Store; "
                            "print(len(Store().rows('at-exit', 'here')))"], capture_output=True, text=True,
                           timeout=120, env=env)
    assert check.returncode == 0, check.stderr
    assert int(check.stdout) == recorded - 50 and recorded > 400      # all after the removal
