"""Sixteen recorder processes write 10,000 rows each into a Redis Cluster while the master
serving their computation is SIGKILLed and started again (persistence: ``appendonly yes``,
``appendfsync always``): no acknowledged row is lost, no row is torn, and every recorder that
failed resumes by writing only its missing rows, as the tuner does."""
import json
import multiprocessing
import time
from pathlib import Path

from nitro.row import TrainingRow
from nitro.store import Store, StoreError, keys

RECORDERS, ROWS, BATCH = 16, 10_000, 100
COMP = "rec"
PERSISTENT = ["--appendonly", "yes", "--appendfsync", "always"]


def row(w: int, i: int) -> TrainingRow:
    """Every field carries the recorder and the input: a torn row would mix them."""
    return TrainingRow(f"w{w}-i{i}", {"W": float(w), "I": float(i)},
                       {"a": 1.0 + w + i * 1e-6, "b": 1.0 + w}, {"c": f"w{w}-i{i}"})


def connect(url: str, deadline: float) -> Store:
    while True:
        try:
            return Store(url)
        except StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def recorder(url: str, w: int, log: Path, start):
    """Write this recorder's rows in batches; log each acknowledged batch; on a store error,
    reconnect, check that everything acknowledged is there, and write what is missing."""
    deadline = time.monotonic() + 120
    report = {"failures": 0, "lost": [], "errors": []}
    acknowledged: list[str] = []
    store = connect(url, deadline)
    store.declare(COMP, ["a", "b", "c"], ["W", "I"])
    start.wait()
    todo = list(range(ROWS))
    while todo:
        try:
            for k in range(0, len(todo), BATCH):
                batch = todo[k:k + BATCH]
                store.put_rows(COMP, f"dev{w}", [row(w, i) for i in batch])
                acknowledged += [f"w{w}-i{i}" for i in batch]
            todo = []
        except StoreError as exc:
            report["failures"] += 1
            report["errors"].append(str(exc)[:200])
            while True:                          # resume: whatever is recorded, the rest again
                time.sleep(0.2)
                try:
                    store = connect(url, deadline)
                    recorded = store.recorded_inputs(COMP, f"dev{w}")
                    break
                except StoreError:
                    if time.monotonic() > deadline:
                        raise
            report["lost"] += [i for i in acknowledged if i not in recorded]
            todo = [i for i in range(ROWS) if f"w{w}-i{i}" not in recorded]
    log.write_text(json.dumps(report))


def test_sixteen_recorders_while_a_cluster_master_is_killed_and_restarted(redis_cluster, tmp_path):
    cluster = redis_cluster(args=PERSISTENT)
    master = cluster.master_of(keys.rows(COMP, "dev0"))
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(RECORDERS + 1, timeout=60)
    logs = [tmp_path / f"recorder{w}.json" for w in range(RECORDERS)]
    procs = [ctx.Process(target=recorder, args=(cluster.url, w, logs[w], start)) for w in range(RECORDERS)]
    for p in procs:
        p.start()
    start.wait()
    total = RECORDERS * ROWS

    def stored() -> int:
        client = master.client()
        return sum(client.hlen(keys.rows(COMP, f"dev{w}")) for w in range(RECORDERS))

    end = time.monotonic() + 120
    while stored() < total // 4:                 # kill once a quarter is written
        assert time.monotonic() < end, "the recorders wrote too slowly"
        time.sleep(0.01)
    killed_at = stored()
    master.kill()
    time.sleep(2.0)                              # > cluster-node-timeout: the cluster notices
    master.start()
    cluster.wait_ok()
    for p in procs:
        p.join(180)
        if p.is_alive():
            p.kill()
            p.join()
        assert p.exitcode == 0
    reports = [json.loads(log.read_text()) for log in logs]
    assert all(r["lost"] == [] for r in reports)                     # nothing acknowledged lost
    # a recorder saw the fault as a StoreError and resumed, or its write, made under WATCH, was
    # tried again inside put_rows (redis-py raises WatchError for a connection lost while watching)
    assert killed_at < total, "the master was killed after every row was written"
    store = Store(cluster.url)
    for w in range(RECORDERS):
        rows = store.rows(COMP, f"dev{w}")
        assert len(rows) == ROWS
        assert all(r == row(w, int(r.input_id.split("-i")[1])) for r in rows)   # none torn
    assert store.devices(COMP) == sorted(f"dev{w}" for w in range(RECORDERS))
