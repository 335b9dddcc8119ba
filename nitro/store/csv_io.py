"""Moving a computation between the store and a dataset directory (CSV layout of
``devices.csv``, ``inputs.csv``, ``measurements.csv``, as in the shared SpMV dataset), streamed:
the CSV files, or the store's rows, are read a chunk at a time into a scratch SQLite database on
disk, which sorts and groups them, so memory does not grow with the data (``devices.csv``, one
line per device, is read whole)."""
from __future__ import annotations

import contextlib
import csv
import itertools
import json
import sqlite3
import statistics
import tempfile
from operator import itemgetter
from pathlib import Path

import numpy as np
import pandas as pd

from ..dataset import (csv_path, device_feature_names, dropped_inputs_note, input_columns, load_devices,
                       not_positive_note, read_csv_chunks, run_times, text_examples)
from ..measurement import TrainingRow
from .redis_store import Store

CHUNK = 20_000      # CSV lines held in memory at a time (a few MB, however wide the file)


@contextlib.contextmanager
def _scratch():
    """A throwaway SQLite database in a temporary directory: no journal and no fsync (nothing in
    it outlives the call); it sorts and indexes on disk within a page cache of a few MB."""
    with tempfile.TemporaryDirectory(prefix="nitro-csv-") as tmp:
        db = sqlite3.connect(Path(tmp) / "scratch.db")
        try:
            db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA temp_store=FILE;")
            yield db
        finally:
            db.close()


# -- export -------------------------------------------------------------------------------------
def export_computation(store: Store, computation: str, directory, devices=None, inputs=None) -> dict:
    """Write ``computation``'s rows and its devices' features (all, or those named in
    ``devices``; the rows of all inputs, or of those in ``inputs``) to ``directory``: measurements
    sorted by device and input, each input's features once (from the first device, in name
    order, that has it). Rows are read a store batch at a time into the scratch database, and
    no file is written before all of them were read."""
    features = store.meta(computation)["features"]
    directory = Path(directory)
    with _scratch() as db:
        columns = "".join(f", f{k} REAL" for k in range(len(features)))
        db.execute(f"CREATE TABLE inputs (input TEXT PRIMARY KEY{columns}) WITHOUT ROWID")
        db.execute("CREATE TABLE meas (device TEXT, input TEXT, k INTEGER, variant TEXT, time REAL)")
        add_input = f"INSERT OR IGNORE INTO inputs VALUES (?{', ?' * len(features)})"
        devs = []
        known = store.devices(computation)
        if isinstance(devices, str):
            devices = [devices]
        if devices is not None and not devices:
            raise ValueError(f"{computation}: no device named to export")
        wanted = None if inputs is None else set(inputs)
        missing = sorted(set(devices or []) - set(known))
        if missing:
            raise ValueError(f"{computation}: no rows recorded on {', '.join(missing)}; devices with rows: {', '.join(known)}")
        for device in (known if devices is None else [d for d in known if d in devices]):
            for batch in store.scan_rows(computation, device):
                if wanted is not None:
                    batch = [r for r in batch if r.input_id in wanted]
                with db:
                    db.executemany(add_input, ([r.input_id, *map(r.features.get, features)] for r in batch))
                    db.executemany("INSERT INTO meas VALUES (?, ?, ?, ?, ?)",
                                   ((device, r.input_id, k, v, t) for r in batch
                                    for k, (v, t) in enumerate(r.times.items()) if t is not None))
            rec = store.device(device, missing_ok=True) or {}
            values = {k: v.get("value") for k, v in rec.items()}
            metadata = {k: v for k, v in store.device_metadata(device).items() if k not in values}
            devs.append({"device": device, **metadata, **values})
        directory.mkdir(parents=True, exist_ok=True)
        measurements = _write_csv(directory / "measurements.csv", ["device", "input", "variant", "time_s"],
                                  db.execute("SELECT device, input, variant, time FROM meas GROUP BY device, input, k "   # HSCAN may give
                                             "ORDER BY device, input, k"))                              # an input twice
        inputs = _write_csv(directory / "inputs.csv", ["input", *features],
                            db.execute("SELECT * FROM inputs ORDER BY input"))
    pd.DataFrame(devs).to_csv(directory / "devices.csv", index=False)
    return {"devices": len(devs), "inputs": inputs, "measurements": measurements}


def _write_csv(path: Path, header: list[str], cursor) -> int:
    """The cursor's rows below ``header`` (None: an empty cell, as pandas writes NaN); their count."""
    count = 0
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(header)
        while rows := cursor.fetchmany(10_000):
            out.writerows(rows)
            count += len(rows)
    return count


# -- import -------------------------------------------------------------------------------------
def import_computation(store: Store, computation: str, directory, variants=None, features=None) -> dict:
    """Read a dataset directory into the store under ``computation``, as
    :func:`nitro.dataset.load_dataset_dir` reads it (repeated measurements: their median; inputs
    with a non-finite feature dropped), streamed: the CSV files go :data:`CHUNK` lines at a time
    into the scratch database and are checked whole before anything is written; then each
    device's rows, grouped back by input, are written in transactions of ``Store.BATCH`` rows.

    A bad directory writes nothing. A store failure while writing (connection lost, out of
    memory, a permission refused) leaves the computation declared, device records, and the
    transactions acknowledged before it: whole rows, each replacing the same input's row; no
    other row is touched. Running the same import again completes it, with the result of one
    import. Into a computation already stored, a directory whose variants are among the stored
    ones is read with the stored variants and features (a device that never timed a variant, as
    a recording where it failed on every input, joins with no time for it)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"dataset directory {directory} does not exist")
    profiles = _read_profiles(directory / "profiles.json", str)
    proxies = _read_profiles(directory.parent / "proxy_profiles.json", int)
    with _scratch() as db:
        found, not_positive = _spool_measurements(db, directory)
        columns, notes = _spool_inputs(db, directory)
        notes += not_positive_note(not_positive)
        devices = load_devices(directory)
        stored = store.meta(computation) if computation in store.computations() else None
        if stored and not variants and set(found) <= set(stored["variants"]):
            variants = stored["variants"]     # a device that never timed some variant joins the computation
        if stored and not features and set(stored["features"]) <= set(columns):
            features = stored["features"]
        variants = list(variants) if variants else found
        features = list(features) if features else list(columns)
        missing = set(features) - set(columns)
        if missing:
            raise ValueError(f"{directory}: inputs have no features {sorted(missing)}")
        if not variants:
            raise ValueError(f"{directory}: no valid measurement (a finite, positive time_s) of any variant")
        if not features:
            raise ValueError(f"{directory}/inputs: no numeric input-feature column ({'; '.join(notes) or 'none given'})")
        db.execute("CREATE TABLE chosen (variant TEXT PRIMARY KEY)")
        db.executemany("INSERT OR IGNORE INTO chosen VALUES (?)", [(v,) for v in variants])
        measured = [d for (d,) in db.execute(
            "SELECT DISTINCT m.device FROM meas m JOIN inputs i ON i.input = m.input "
            "WHERE m.time IS NOT NULL ORDER BY m.device")]
        (written,) = db.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT m.device, m.input FROM meas m JOIN inputs i ON i.input = m.input "
            "JOIN chosen c ON c.variant = m.variant WHERE m.time IS NOT NULL)").fetchone()
        if not written:
            raise ValueError(f"{directory}: no input has both finite features and a measurement")
        store.declare(computation, variants, features)
        for device in measured:
            if device in devices.index:
                record, metadata = _device_record(devices, device)
                store.put_device(device, record, replace=False)
                store.put_device_metadata(device, metadata)
            store.put_rows(computation, device, _rows(db, device, [columns[f] for f in features], features, variants))
    notes += _import_profiles(store, computation, directory, measured, profiles, proxies)
    return {"devices": len(measured), "rows": written, "notes": notes}


def _read_profiles(path: Path, second: type) -> dict | None:
    """A profiles file as ``nitro profile`` keys it (``variant|input`` or ``PROXY|phi`` to
    ``{metric: number}``), or ``None`` when there is none; a malformed one is an error."""
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text())
        out = {}
        for key, metrics in raw.items():
            first, rest = key.rsplit("|", 1)
            out[(first, second(rest))] = {str(m): float(v) for m, v in metrics.items()}
        return out
    except (ValueError, AttributeError, TypeError) as exc:
        raise ValueError(f"{path}: not a profiles file (keys 'name|{'input' if second is str else 'phi'}' "
                         f"to {{metric: number}}): {exc}") from None


def _import_profiles(store: Store, computation: str, directory: Path, measured: list[str], profiles, proxies) -> list[str]:
    """Store a one-device folder's variant profiles (``profiles.json``) and its device's proxy
    profiles (``../proxy_profiles.json`` beside ``../device.json``), which P-DFS reads."""
    if profiles is None and proxies is None:
        return []
    if len(measured) != 1:
        return [f"profiles not imported: {directory} holds {len(measured)} devices and the profiles name none"]
    device, notes = measured[0], []
    if profiles:
        store.put_profiles(computation, device, profiles)
        notes.append(f"imported {len(profiles)} variant profiles of {device}")
    record = directory.parent / "device.json"
    if proxies:
        try:
            owner = next(iter(json.loads(record.read_text())), None) if record.exists() else None
        except (ValueError, AttributeError):
            owner = None
        if owner == device:
            store.put_proxy_profiles(device, proxies)
            notes.append(f"imported {len(proxies)} proxy profiles of {device}")
        else:
            notes.append(f"proxy profiles not imported: {record} does not name {device}")
    return notes


def _spool_measurements(db: sqlite3.Connection, directory: Path) -> tuple[list[str], int]:
    """``measurements.csv`` into table ``meas`` (device, input, variant, time: NULL where not a
    finite, positive number); the variants with a time, sorted, and how many times were zero
    or negative."""
    db.execute("CREATE TABLE meas (device TEXT, input TEXT, variant TEXT, time REAL)")
    need, found, not_positive = {"device", "input", "variant", "time_s"}, set(), 0
    for chunk in read_csv_chunks(directory, "measurements", CHUNK):
        if not need <= set(chunk.columns):
            raise ValueError(f"{directory}/measurements: needs columns {sorted(need)}, has {list(chunk.columns)}")
        chunk = chunk.dropna(subset=["device", "input", "variant"])   # a row naming nothing is dropped
        time, bad = run_times(chunk["time_s"])                          # NaN: stored as NULL
        not_positive += bad
        found.update(chunk["variant"][time.notna()].unique().tolist())
        with db:
            db.executemany("INSERT INTO meas VALUES (?, ?, ?, ?)",
                           zip(*(chunk[c].tolist() for c in ("device", "input", "variant")), time.tolist()))
    db.execute("CREATE INDEX meas_by_device ON meas (device, input)")
    return sorted(found), not_positive


def _spool_inputs(db: sqlite3.Connection, directory: Path) -> tuple[dict[str, str], list[str]]:
    """``inputs.csv`` into table ``inputs`` (input, f0, f1, ...: each column as a number, NULL
    where it is not one), keeping the columns and inputs :func:`nitro.dataset.load_dataset_dir`
    keeps (:func:`nitro.dataset.input_columns`); ``{column: table column}`` of the kept columns,
    and notes on what was left out."""
    path, names, text, empty, n = csv_path(directory, "inputs"), None, {}, None, 0
    for chunk in read_csv_chunks(directory, "inputs", CHUNK):
        if "input" not in chunk.columns:
            raise ValueError(f"{directory}/inputs: needs an 'input' column")
        if names is None:
            names = [c for c in chunk.columns if c != "input"]
            empty = np.zeros(len(names), dtype=np.int64)
            db.execute(f"CREATE TABLE inputs (input TEXT PRIMARY KEY{''.join(f', f{k} REAL' for k in range(len(names)))})")
        chunk = chunk.dropna(subset=["input"])
        values = chunk[names].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float, copy=True)
        values[~np.isfinite(values)] = np.nan                          # NULL: no number
        empty += np.isnan(values).sum(axis=0)
        n += len(chunk)
        text = {**text_examples(chunk[[c for c in names if c not in text]]), **text}
        try:
            with db:    # one transaction per chunk: rolled back whole on a repeated input
                db.executemany(f"INSERT INTO inputs VALUES (?{', ?' * len(names)})",
                               ([i, *v] for i, v in zip(chunk["input"].tolist(), values.tolist())))
        except sqlite3.IntegrityError:
            raise ValueError(f"{path}: input {_repeated(db, chunk['input'])!r} appears more than once") from None
    if names is None:
        raise ValueError(f"{path}: no input")
    kept, notes = input_columns(names, n, text, empty)
    cols = {name: f"f{names.index(name)}" for name in kept}
    if kept:
        incomplete = " OR ".join(f"{c} IS NULL" for c in cols.values())
        *missing, dropped = db.execute(f"SELECT {''.join(f'TOTAL({c} IS NULL), ' for c in cols.values())}"
                                       f"TOTAL({incomplete}) FROM inputs").fetchone()
        notes += dropped_inputs_note(kept, missing, int(dropped), n)
        db.execute(f"DELETE FROM inputs WHERE {incomplete}")
    return cols, notes


def _repeated(db: sqlite3.Connection, ids: pd.Series) -> str:
    """An input id that ``ids`` repeats, or that table ``inputs`` already holds."""
    twice = ids[ids.duplicated()]
    if len(twice):
        return twice.iloc[0]
    return next(i for i in ids if db.execute("SELECT 1 FROM inputs WHERE input = ?", (i,)).fetchone())


def _rows(db: sqlite3.Connection, device: str, columns: list[str], features: list[str], variants: list[str]):
    """The device's training rows, in input order: each input's chosen features, and each chosen
    variant's time (the median of its measurements; None where it has none)."""
    query = (f"SELECT m.input, m.variant, m.time, {', '.join('i.' + c for c in columns)} FROM meas m "
             "JOIN inputs i ON i.input = m.input JOIN chosen c ON c.variant = m.variant "
             "WHERE m.device = ? AND m.time IS NOT NULL ORDER BY m.input")
    for input_id, group in itertools.groupby(db.execute(query, (device,)), key=itemgetter(0)):
        samples: dict[str, list[float]] = {}
        for first in group:     # every line of the group holds the input's features
            samples.setdefault(first[1], []).append(first[2])
        yield TrainingRow(input_id, dict(zip(features, first[3:])),
                          {v: statistics.median(samples[v]) if v in samples else None for v in variants})


def _device_record(devices: pd.DataFrame, device: str) -> tuple[dict, dict]:
    """A device's feature record (its finite numeric columns) and its metadata (its text
    columns: ``vendor``, ``kind``, ``arch``, ...), which the store keeps apart."""
    row, names = devices.loc[device], device_feature_names(devices)
    features = {k: {"value": float(row[k]), "unit": "", "source": "datasheet"} for k in names if np.isfinite(row[k])}
    metadata = {k: row[k] for k in devices.columns if k not in names and isinstance(row[k], str) and row[k]}
    return features, metadata
