"""``nitro bench store``: how many training rows per second a store takes and gives. For the
embedded store, a single ``redis-server`` and a three-master Redis Cluster (started here, on
loopback, with the README's persistence): rows per second written in batches by one process and
by several at once (each a device of one computation, as source machines record), the time and
the reader's peak memory to read them all back as validated rows, and, in the same run, two
references: one transaction per row (as the tuner records while it measures) and the raw HSCAN
transfer of the same rows without parsing or validation."""
from __future__ import annotations

import multiprocessing
import os
import resource
import tempfile
import time
from pathlib import Path

from ..row import TrainingRow
from ..store import Store
from .servers import local_redis

COMPUTATION = "bench_store"
VARIANTS = ["coo", "csr", "ell", "sellp"]          # the shape of an SpMV row
FEATURES = ["rows", "cols", "nnz", "max_row_nnz"]
TARGETS = ("embedded", "server", "cluster")
GOALS = {"write_rows_per_s": 50_000, "read_seconds_per_million": 30.0, "read_peak_mb": 1024}


def make_row(device: int, i: int) -> TrainingRow:
    """A plausible SpMV training row (4 features, 4 variant times, one of them failed)."""
    n = 1000.0 + i
    times = {"coo": 1e-4 + i * 1e-9, "csr": 8e-5 + device * 1e-7, "ell": None if i % 7 == 0 else 9e-5,
             "sellp": 7.5e-5 + (i % 13) * 1e-6}
    return TrainingRow(f"matrix-{i:07d}", {"rows": n, "cols": n, "nnz": 7.5 * n, "max_row_nnz": 12.0 + i % 5},
                       times, {"ell": "skipped by early stopping"} if times["ell"] is None else {})


def _write(url, computation: str, device: int, count: int, batch: int, start) -> None:
    """A writer process: ``count`` rows of one device, ``batch`` per call (0: one per call)."""
    store = Store(url)
    store.declare(computation, VARIANTS, FEATURES)
    rows, name = [make_row(device, i) for i in range(count)], f"dev{device}"   # measured before, as a recorder's
    start.wait()
    if batch == 0:
        for row in rows:
            store.put_row(computation, name, row)
        return
    for k in range(0, count, batch):
        store.put_rows(computation, name, rows[k:k + batch])


def _read(url, computation: str, devices: list[str], out) -> None:
    """A reader process: every device's rows as validated TrainingRows, then the same hashes
    as raw bytes; its own peak memory (a fresh process: nothing else in it)."""
    store = Store(url)
    began = time.perf_counter()
    rows = [store.rows(computation, d) for d in devices]
    seconds = time.perf_counter() - began
    count, peak_mb = sum(map(len, rows)), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    del rows
    began = time.perf_counter()
    raw = sum(len(batch) for d in devices for batch in store._scan_rows(computation, d))
    out.put({"rows": count, "seconds": seconds, "peak_mb": peak_mb,
             "raw_rows": raw, "raw_seconds": time.perf_counter() - began})


def _run_writers(ctx, url, computation: str, writers: int, count: int, batch: int) -> float:
    """Rows per second of ``writers`` processes writing ``count`` rows each, timed from their
    common start (after their imports and connections) to the last one's end."""
    start = ctx.Barrier(writers + 1)
    procs = [ctx.Process(target=_write, args=(url, computation, w, count, batch, start)) for w in range(writers)]
    for p in procs:
        p.start()
    start.wait(timeout=300)
    began = time.perf_counter()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a benchmark writer failed (exit code {p.exitcode})")
    return writers * count / (time.perf_counter() - began)


def bench_target(url, rows: int, writers: int, batch: int) -> dict:
    """Every figure for the store at ``url`` (None: the embedded store of ``$NITRO_DATA_DIR``)."""
    ctx = multiprocessing.get_context("spawn")      # fresh processes: no inherited connections or memory
    each = rows // writers
    out = {"write_1_rows_per_s": _run_writers(ctx, url, "bench_one", 1, each, batch),
           "reference_row_per_call_rows_per_s": _run_writers(ctx, url, "bench_row", 1, min(each, 5000), 0),
           f"write_{writers}_rows_per_s": _run_writers(ctx, url, COMPUTATION, writers, each, batch)}
    queue = ctx.Queue()
    reader = ctx.Process(target=_read, args=(url, COMPUTATION, [f"dev{w}" for w in range(writers)], queue))
    reader.start()
    read = queue.get(timeout=1800)
    reader.join()
    if read["rows"] != writers * each or read["raw_rows"] < read["rows"]:
        raise RuntimeError(f"read back {read['rows']} rows of the {writers * each} written")
    out.update(read_rows=read["rows"], read_seconds=read["seconds"], read_rows_per_s=read["rows"] / read["seconds"],
               read_peak_mb=read["peak_mb"], reference_raw_read_seconds=read["raw_seconds"])
    return out


def bench_store(rows: int = 1_000_000, writers: int = 8, batch: int = 1000, targets=TARGETS) -> dict:
    """The figures of every target in ``targets`` (a target whose server binary is missing is
    reported as skipped, with the reason)."""
    unknown = set(targets) - set(TARGETS)
    if unknown or rows < writers or writers < 1 or batch < 1:
        raise ValueError(f"targets must be among {TARGETS} (got {sorted(unknown)}), rows >= writers >= 1, batch >= 1")
    result = {"rows": rows, "writers": writers, "batch": batch, "cpus": os.cpu_count(), "goals": GOALS, "targets": {}}
    for target in targets:
        with tempfile.TemporaryDirectory(prefix="nitro-bench-store-") as tmp:
            try:
                if target == "embedded":
                    result["targets"][target] = _embedded(Path(tmp), rows, writers, batch)
                    continue
                with local_redis(Path(tmp), cluster=target == "cluster") as url:
                    result["targets"][target] = bench_target(url, rows, writers, batch)
            except FileNotFoundError as exc:
                result["targets"][target] = {"skipped": str(exc)}
    server = result["targets"].get("server", {})
    if "read_seconds" in server:
        result["goals_met"] = {
            "write_rows_per_s": server[f"write_{writers}_rows_per_s"] >= GOALS["write_rows_per_s"],
            "read_seconds_per_million": server["read_seconds"] * 1e6 / rows <= GOALS["read_seconds_per_million"],
            "read_peak_mb": server["read_peak_mb"] <= GOALS["read_peak_mb"]}
    return result


def _embedded(directory: Path, rows: int, writers: int, batch: int) -> dict:
    """The embedded store in ``directory``: this process starts it, the writers attach to it."""
    from ..store.embedded import release
    saved = os.environ.get("NITRO_DATA_DIR")
    os.environ["NITRO_DATA_DIR"] = str(directory)
    try:
        owner = Store()
        try:
            return bench_target(None, rows, writers, batch)
        finally:
            release(owner.client)
    finally:
        if saved is None:
            os.environ.pop("NITRO_DATA_DIR")
        else:
            os.environ["NITRO_DATA_DIR"] = saved


def format_store(result: dict) -> str:
    w = result["writers"]
    lines = [f"{result['rows']:,} rows ({w} writers, {result['batch']} rows a call, {result['cpus']} CPUs); "
             f"goals on a single server: >= {GOALS['write_rows_per_s']:,} rows/s by {w} writers, "
             f"<= {GOALS['read_seconds_per_million']:.0f} s and <= {GOALS['read_peak_mb']} MB to read 1,000,000",
             f"{'store':10} {'1 writer/s':>11} {'row/call/s':>11} {f'{w} writers/s':>13} {'read/s':>9} "
             f"{'read s':>7} {'raw s':>6} {'peak MB':>8}"]
    for name, t in result["targets"].items():
        if "skipped" in t:
            lines.append(f"{name:10} skipped: {t['skipped']}")
            continue
        lines.append(f"{name:10} {t['write_1_rows_per_s']:11,.0f} {t['reference_row_per_call_rows_per_s']:11,.0f} "
                     f"{t[f'write_{w}_rows_per_s']:13,.0f} {t['read_rows_per_s']:9,.0f} {t['read_seconds']:7.1f} "
                     f"{t['reference_raw_read_seconds']:6.1f} {t['read_peak_mb']:8.0f}")
    if "goals_met" in result:
        lines.append("goals met on the single server: " + ", ".join(f"{k} {'yes' if v else 'NO'}"
                                                                    for k, v in result["goals_met"].items()))
    return "\n".join(lines)
