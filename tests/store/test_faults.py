"""Faults: the Redis server SIGKILLed and restarted in the middle of recording and of
``tune_from_source``; the embedded store across process restarts and a killed client."""
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from nitro import TimingPolicy, autotuner, code_variant
from nitro.row import TrainingRow
from nitro.store import Store, StoreError, embedded, keys
from nitro.transfer.tune import tune_from_source

PERSISTENT = ["--appendonly", "yes", "--appendfsync", "always"]
PASSWORD = "fault-test-secret"
POLICY = TimingPolicy(min_repeats=1, max_repeats=2, target_seconds=0.0, timeout=10.0)
N_INPUTS = 40
IDS = [f"in{i}" for i in range(N_INPUTS)]


def counting_code_variant(counter: Path):
    """Two real variants that append the input they run on to ``counter`` (they run in
    the measurement worker, so the count crosses processes) and take a little time."""
    def log(x):
        with open(counter, "a") as f:
            f.write(f"in{x}\n")

    def plus(x):
        log(x)
        time.sleep(0.005)
        return x + 1

    def plus_too(x):
        log(x)
        time.sleep(0.005)
        return 1 + x

    cv = code_variant("inc", [plus, plus_too], {"x": lambda x: float(x)})
    cv.record, cv.device_id = True, "dev"
    return cv


def measured(counter: Path) -> set[str]:
    return set(counter.read_text().split()) if counter.exists() else set()


def record_all(url: str, counter: Path, outcome: Path):
    tuner = autotuner("inc", store=url, policy=POLICY, progress=False)
    tuner.set_training_args(list(range(N_INPUTS)), ids=IDS)
    try:
        tuner.measure(counting_code_variant(counter))
        outcome.write_text("finished")
    except StoreError as exc:
        outcome.write_text(f"StoreError: {exc}")
    except Exception as exc:  # reported to the test, which fails on it
        outcome.write_text(f"{type(exc).__name__}: {exc}")


def wait_for(predicate, timeout=30.0, what="condition"):
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def join(child, timeout=60.0):
    """Wait for a child process; one that hangs is killed and fails the test."""
    child.join(timeout)
    if child.is_alive():
        child.kill()
        child.join()
        raise AssertionError(f"child process hung for {timeout} s")
    assert child.exitcode == 0


@pytest.fixture(params=["system", "cluster"])
def killable(request):
    """A password-protected, persistent store whose server (a cluster: the master serving the
    ``inc`` computation's slot) a test SIGKILLs and starts again; ``.name`` as messages show it."""
    if request.param == "system":
        server = request.getfixturevalue("redis_server")(args=PERSISTENT, password=PASSWORD)
        server.name, server.master = f"redis://:***@127.0.0.1:{server.port}/0", server
        server.restart = server.start
        return server
    cluster = request.getfixturevalue("redis_cluster")(args=PERSISTENT, password=PASSWORD)
    cluster.name = f"redis://:***@127.0.0.1:{cluster.nodes[0].port}/0?cluster=true"
    cluster.master = cluster.master_of(keys.rows("inc", "dev"))
    cluster.kill = cluster.master.kill

    def restart():                    # same port, data directory and nodes.conf: its slots again
        cluster.master.start()
        cluster.wait_ok()
    cluster.restart = restart
    return cluster


def test_server_killed_while_recording_then_resumed(killable, tmp_path):
    server = killable
    counter, outcome = tmp_path / "calls.txt", tmp_path / "outcome.txt"
    rows_key = keys.rows("inc", "dev")
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=record_all, args=(server.url, counter, outcome))
    child.start()
    wait_for(lambda: server.master.client().hlen(rows_key) >= 10, what="10 recorded rows")
    server.kill()
    join(child)
    message = outcome.read_text()
    assert message.startswith(f"StoreError: store {server.name}"), message
    assert PASSWORD not in message

    server.restart()                               # same port, same data directory
    store = Store(server.url)
    rows = store.rows("inc", "dev")                # every stored row parses: none is partial
    recorded = {r.input_id for r in rows}
    assert 10 <= len(recorded) < N_INPUTS
    assert all(set(r.times) == {"plus", "plus_too"} and r.best for r in rows)
    assert store.devices("inc") == ["dev"]
    assert recorded <= measured(counter)           # acknowledged rows survived the SIGKILL

    counter.unlink()
    tuner = autotuner("inc", store=store, policy=POLICY, progress=False)
    tuner.set_training_args(list(range(N_INPUTS)), ids=IDS)
    rows = tuner.measure(counting_code_variant(counter))
    assert sorted(r.input_id for r in rows) == sorted(IDS)
    assert measured(counter) == set(IDS) - recorded  # only the missing inputs ran again
    assert len(store.rows("inc", "dev")) == N_INPUTS


def tune_child(url: str, outcome: Path):
    try:
        tune_from_source(Store(url), "toy", ["a", "b", "c"], ["size", "skew"], target="dev0",
                         search_based_dfs=True, max_subset_size=3, n_jobs=1, progress=False)
        outcome.write_text("finished")
    except StoreError as exc:
        outcome.write_text(f"StoreError: {exc}")
    except Exception as exc:
        outcome.write_text(f"{type(exc).__name__}: {exc}")


def test_server_killed_during_tune_from_source(redis_server, plant_sources, tmp_path):
    server = redis_server(args=PERSISTENT)
    store = Store(server.url)
    plant_sources(store)
    last_read = keys.rows("toy", "dev5")         # the last source the tuner reads
    outcome = tmp_path / "outcome.txt"
    with server.client(socket_timeout=60).monitor() as monitor:
        child = multiprocessing.get_context("fork").Process(target=tune_child, args=(server.url, outcome))
        child.start()
        for event in monitor.listen():           # kill once every source has been read
            if event["command"].startswith("HSCAN") and last_read in event["command"]:
                server.kill()
                break
    join(child)
    message = outcome.read_text()
    assert message.startswith(f"StoreError: store redis://127.0.0.1:{server.port}/0 failed")
    server.start()
    store = Store(server.url)
    assert store.model("toy", "dev0") is None     # no half-written model
    assert len(store.rows("toy", "dev3")) == 120  # the source data is intact
    model = tune_from_source(store, "toy", ["a", "b", "c"], ["size", "skew"], target="dev0",
                             search_based_dfs=True, max_subset_size=3, n_jobs=1, progress=False)
    assert store.model("toy", "dev0") == model.to_dict()


def embedded_writer(data_dir: str, first: int, count: int, hold: bool):
    os.environ["NITRO_DATA_DIR"] = data_dir
    store = Store()
    store.declare("inc", ["a"], ["x"])
    for i in range(first, first + count):
        store.put_row("inc", "dev", TrainingRow(f"in{i}", {"x": float(i)}, {"a": 1.0}))
    if hold:                                      # killed here by the test, mid-session
        Path(data_dir, "written").touch()
        time.sleep(60)


def test_embedded_store_survives_restarts_and_a_killed_client(tmp_path, monkeypatch):
    data_dir = str(tmp_path)
    ctx = multiprocessing.get_context("fork")   # separate processes, like separate runs
    first = ctx.Process(target=embedded_writer, args=(data_dir, 0, 20, False))
    first.start()
    join(first)
    killed = ctx.Process(target=embedded_writer, args=(data_dir, 20, 20, True))
    killed.start()
    wait_for(lambda: (tmp_path / "written").exists(), what="the client to write")
    os.kill(killed.pid, signal.SIGKILL)
    killed.join(10)
    monkeypatch.setenv("NITRO_DATA_DIR", data_dir)
    store = Store()
    try:
        assert sorted(r.input_id for r in store.rows("inc", "dev")) == sorted(f"in{i}" for i in range(40))
    finally:
        embedded.shutdown(store.client)


def test_a_server_that_evicts_keys_when_full_is_warned_of(redis_server):
    """allkeys-* policies drop keys without a time to live, as all of nitro's are, once the
    server is full: no later error would tell that rows are gone."""
    evicting = redis_server(args=["--maxmemory", "50mb", "--maxmemory-policy", "allkeys-lru"])
    with pytest.warns(RuntimeWarning, match="evicts keys when full .maxmemory-policy allkeys-lru."):
        Store(evicting.url)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Store(redis_server(args=["--maxmemory", "50mb", "--maxmemory-policy", "noeviction"]).url)
        Store(redis_server(args=["--maxmemory", "50mb", "--maxmemory-policy", "volatile-lru"]).url)
    import subprocess
    import sys
    listed = subprocess.run([sys.executable, "-m", "nitro.cli", "store", "ls", "--store", evicting.url],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and listed.stderr.startswith("nitro: warning: store ") \
        and "RuntimeWarning" not in listed.stderr and len(listed.stderr.splitlines()) == 1, listed.stderr


def test_a_server_restarted_within_seconds_is_reconnected_to_without_an_error(redis_server, tmp_path):
    """The server SIGKILLed mid-recording and started again a second later: the recorder's
    commands reconnect (retried with back-off for about 15 s) and the recording finishes.
    (A cluster follows redis-py's rules: its slot map is read again at once, without back-off.)"""
    server = redis_server(args=PERSISTENT, password=PASSWORD)
    server.master, server.restart = server, server.start
    counter, outcome = tmp_path / "calls.txt", tmp_path / "outcome.txt"
    child = multiprocessing.get_context("fork").Process(target=record_all, args=(server.url, counter, outcome))
    child.start()
    wait_for(lambda: server.master.client().hlen(keys.rows("inc", "dev")) >= 10, what="10 recorded rows")
    server.kill()
    time.sleep(1.0)
    server.restart()
    join(child)
    assert outcome.read_text() == "finished"
    assert len(Store(server.url).rows("inc", "dev")) == N_INPUTS


def test_a_server_that_never_answered_is_reported_at_once(tmp_path):
    import socket
    with socket.socket() as s:       # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(StoreError, match="does not answer"):
        Store(f"redis://127.0.0.1:{port}/0")
    assert time.monotonic() - start < 5.0       # not the reconnections' back-off
