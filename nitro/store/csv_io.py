"""Moving a computation between the store and a dataset directory (CSV layout of
``devices.csv``, ``inputs.csv``, ``measurements.csv``, as in the shared SpMV dataset), streamed:
the CSV files, or the store's rows, are read a chunk at a time into a scratch SQLite database on
disk, which sorts and groups them, so memory does not grow with the data (``devices.csv``, one
line per device, is read whole)."""
from __future__ import annotations

import contextlib
import csv
import functools
import itertools
import json
import math
import sqlite3
import statistics
import tempfile
from operator import itemgetter
from pathlib import Path

import numpy as np
import pandas as pd

from ..dataset import (ERROR_COLUMN, FEATURE_COLUMNS, MEASUREMENT_COLUMNS, DroppedTimes, check_measurement_columns,
                       csv_path, dataset_dir, dataset_files, device_feature_names, did_you_mean, dropped_inputs_note,
                       failed_runs, input_columns, load_devices, load_feature_provenance, long_times_note,
                       read_csv_chunks, refuse_to_overwrite, repeated_note, run_times, text_examples,
                       unlisted_inputs_note, unmeasured_inputs_note, unnamed_note, unread_columns_note)
from ..progress import progress_bar
from ..row import TrainingRow
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
def export_computation(store: Store, computation: str, directory, devices=None, inputs=None,
                       replace: bool = False) -> dict:
    """Write ``computation``'s rows and its devices' features (all, or those named in
    ``devices``; the rows of all inputs, or of those in ``inputs``) to ``directory``: measurements
    sorted by device and input, each input's features once (from the first device, in name
    order, that has it). Rows are read a store batch at a time into the scratch database, and
    no file is written before all of them were read. A directory that holds a dataset already is
    refused, unless ``replace`` (a recording rewriting its own export): its files are then
    removed before the new ones are written."""
    features = store.meta(computation)["features"]
    directory = Path(directory)
    if not replace:
        refuse_to_overwrite(directory)
    with _scratch() as db:
        columns = "".join(f", f{k} REAL" for k in range(len(features)))
        db.execute(f"CREATE TABLE inputs (input TEXT PRIMARY KEY{columns}) WITHOUT ROWID")
        db.execute("CREATE TABLE meas (device TEXT, input TEXT, k INTEGER, variant TEXT, time REAL, error TEXT)")
        add_input = f"INSERT OR IGNORE INTO inputs VALUES (?{', ?' * len(features)})"
        devs, meta_names, provenance = [], {}, []
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
                    db.executemany("INSERT INTO meas VALUES (?, ?, ?, ?, ?, ?)",      # a failed run: why, no time
                                   ((device, r.input_id, k, v, t, None if t is not None else r.failed[v])
                                    for r in batch for k, (v, t) in enumerate({**r.times, **{v: None for v in r.failed if v not in r.times}}.items())
                                    if t is not None or v in r.failed))
            rec = store.device(device, missing_ok=True) or {}
            values = {k: v.get("value") for k, v in rec.items()}
            metadata = {k: v for k, v in store.device_metadata(device).items() if k not in values}
            devs.append({"device": device, **metadata, **values})
            meta_names.update(dict.fromkeys(metadata))
            provenance += [(device, k, v.get("unit", ""), v.get("source", "")) for k, v in rec.items()]
        directory.mkdir(parents=True, exist_ok=True)
        for stale in dataset_files(directory):     # replace: no .csv.gz left beside a new .csv
            stale.unlink()
        measurements = _write_csv(directory / "measurements.csv", [*MEASUREMENT_COLUMNS, ERROR_COLUMN],
                                  db.execute("SELECT device, input, variant, time, error FROM meas "   # HSCAN may give
                                             "GROUP BY device, input, k ORDER BY device, input, k"))  # an input twice
        inputs = _write_csv(directory / "inputs.csv", ["input", *features],
                            db.execute("SELECT * FROM inputs ORDER BY input"))
    frame = pd.DataFrame(devs)      # the metadata (kind, vendor, arch) first, as the shared data has it
    first = ["device", *meta_names]
    frame[first + [c for c in frame.columns if c not in first]].to_csv(directory / "devices.csv", index=False)
    pd.DataFrame(provenance, columns=FEATURE_COLUMNS).to_csv(directory / "device_features.csv", index=False)
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
def import_computation(store: Store, computation: str, directory, variants=None, features=None,
                       update_devices: bool = False, progress: bool = False) -> dict:
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
    a recording where it failed on every input, joins with no time for it), and a re-imported
    row keeps the stored times of the variants the directory does not time for that input.

    Every ``devices.csv`` row is recorded (a device without measurements is a zero-shot target).
    Device records are shared by all computations: a value that differs from the stored one is
    an error, before anything is written, unless ``update_devices`` (then it is overwritten and
    noted); features and metadata the store lacks are added. ``progress``: bars (or a line a
    minute in a log) while the measurements are read and the rows written; an import interrupted
    (Ctrl-C, SIGTERM) while writing says so in the exception's notes."""
    directory = dataset_dir(directory)
    profiles = _read_profiles(directory / "profiles.json", str)
    proxies = _read_profiles(directory.parent / "proxy_profiles.json", int)
    with _scratch() as db:
        found, dropped, unnamed, unread = _spool_measurements(db, directory, progress)
        columns, notes = _spool_inputs(db, directory)
        notes += unread + unnamed_note(unnamed) + dropped.notes() + repeated_note(*db.execute(
            "SELECT COUNT(*), COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM meas WHERE time IS NOT NULL "
            "AND input IN (SELECT input FROM inputs) GROUP BY device, input, variant HAVING n > 1)").fetchone())
        notes += long_times_note(db.execute(       # the median time, as nitro evaluate reads it
            "SELECT AVG(time) FROM (SELECT time FROM meas WHERE time IS NOT NULL ORDER BY time "
            "LIMIT 2 - (SELECT COUNT(time) FROM meas) % 2 OFFSET (SELECT (COUNT(time) - 1) / 2 FROM meas))").fetchone()[0])
        devices, device_notes = load_devices(directory)
        notes += device_notes
        stored = store.meta(computation) if computation in store.computations() else None
        if stored and not variants and set(found) <= set(stored["variants"]):
            variants = stored["variants"]     # a device that never timed some variant joins the computation
        if stored and not features and set(stored["features"]) <= set(columns):
            features = stored["features"]
            extra = [c for c in columns if c not in features]
            if extra:       # the stored computation's features are its models' inputs: no new one joins
                notes.append(f"{directory}/inputs: columns {extra} are not features of the stored computation "
                             f"{computation!r} ({features}): not read")
        untimed = [v for v in variants or () if v not in found and v not in (stored or {}).get("variants", ())]
        if untimed:     # a variant that failed everywhere joins so; a misspelt one must not join unsaid
            comma = any("," in v for v in found)     # a name the command line split at its comma
            notes.append(f"variants {untimed} have no valid time in {directory}/measurements (measured: "
                         f"{found or 'none'}): recorded with no time on every input"
                         + ("; on the command line, quote a name holding a comma: '\"a,b\",c'" if comma else ""))
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
        records, device_notes = _device_writes(store, directory, devices, update_devices)
        notes += device_notes + _unmeasured_note(devices, measured) + \
            [_unlisted_note(store, d, list(devices.index)) for d in measured
             if d not in devices.index and store.device(d, missing_ok=True) is None] + \
            _featureless_note(store, devices, records, measured)
        store.declare(computation, variants, features)
        for device, (record, metadata) in records.items():
            if record:
                store.put_device(device, record, replace=False)
            if metadata:
                store.put_device_metadata(device, metadata)
        kept: dict[tuple[str, str], list[str]] = {}     # (device, input) -> stored variants kept
        rows = progress_bar(((d, r) for d in measured for r in _rows(db, d, [columns[f] for f in features], features,
                                                                    variants)),
                            desc="writing rows", total=written, unit="row", enabled=progress)
        done: list[str] = []
        try:
            for device, group in itertools.groupby(rows, key=itemgetter(0)):
                store.merge_rows(computation, device, (r for _, r in group),
                                 functools.partial(_keep_stored, device, kept))
                done.append(device)
        except KeyboardInterrupt as exc:    # Ctrl-C or SIGTERM: say what the store now holds
            _add_note(exc, _interrupted_note(computation, directory, done, measured))
            raise
    if kept:
        notes.append(f"{len(kept)} stored rows merged: they keep their stored times of variants this "
                     f"directory does not time for their input ({', '.join(sorted({v for k in kept.values() for v in k}))})")
    notes += _import_profiles(store, computation, directory, measured, profiles, proxies)
    return {"devices": len(measured), "rows": written, "notes": notes}


def _interrupted_note(computation: str, directory: Path, done: list[str], measured: list[str]) -> str:
    """What an import stopped while writing left in the store, and how to complete it."""
    part = measured[len(done)] if len(done) < len(measured) else None
    return (f"the import of {directory} into {computation!r} was interrupted: the rows of {len(done)} of "
            f"{len(measured)} devices are written" + (f", {part}'s in part" if part else "") +
            "; run the same import again to complete it (each input's row is replaced, never added twice)")


def _add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)`` (Python 3.11+), or the same ``__notes__`` list before it."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)
    else:
        exc.__notes__ = [*getattr(exc, "__notes__", ()), note]


SHOWN = 5       # differing device values an error names


def _device_writes(store: Store, directory: Path, devices: pd.DataFrame, update: bool) -> tuple[dict, list[str]]:
    """``{device: (features, metadata)}`` to write for every ``devices.csv`` row: the values the
    store lacks, and those that differ from its records (an error, unless ``update``: then
    overwritten, with a note per device), since every computation's models read them."""
    writes, changes, from_store = {}, {}, {}
    provenance = load_feature_provenance(directory) or _recording_provenance(directory)
    for device in devices.index:
        record, metadata = _device_record(devices, device, provenance)
        old_record, old_metadata = store.device(device, missing_ok=True) or {}, store.device_metadata(device)
        kept = [k for k, old in old_record.items()
                if old.get("value") is not None and (record.get(k) or {}).get("value") is None]
        if kept:            # empty or absent in devices.csv: tuning reads the stored value
            from_store[device] = kept
        new_record, new_metadata = {}, {}
        for name, rec in record.items():
            old = old_record.get(name, {})
            if old.get("value") is None:
                if rec["value"] is not None or name not in old_record:
                    new_record[name] = rec
            elif rec["value"] is None:
                continue            # an unknown value never replaces a stored one
            elif not _same(old["value"], rec["value"]):
                changes.setdefault(device, []).append((name, old["value"], rec["value"]))
                new_record[name] = {**rec, "unit": rec["unit"] or old.get("unit", "")}   # a value and its unit
            elif rec["unit"] and rec["unit"] != old.get("unit"):     # the same number in another unit
                if old.get("unit"):
                    changes.setdefault(device, []).append((f"{name} unit", old["unit"], rec["unit"]))
                new_record[name] = {**old, "unit": rec["unit"]}
        for name, value in metadata.items():
            if name not in old_metadata:
                new_metadata[name] = value
            elif old_metadata[name] != value:
                changes.setdefault(device, []).append((name, old_metadata[name], value))
                new_metadata[name] = value
        if new_record or new_metadata:
            writes[device] = (new_record, new_metadata)
    listed = [(d, *c) for d, cs in changes.items() for c in cs]
    if listed and not update:
        shown = "; ".join(f"{d} {name}: stored {old!r}, new {new!r}" for d, name, old, new in listed[:SHOWN])
        more = f" (and {len(listed) - SHOWN} more)" if len(listed) > SHOWN else ""
        raise ValueError(f"{csv_path(directory, 'devices')}: {len(listed)} device values differ from the store's "
                         f"device records, which the models of every computation use: {shown}{more}; nothing "
                         "was written. To overwrite the stored records import with update_devices=True "
                         "(nitro store import --update-devices); to keep them, make devices.csv agree "
                         "or leave those cells empty")
    notes = [f"device {d} record updated: " + ", ".join(f"{name} {old!r} -> {new!r}" for name, old, new in cs)
             for d, cs in changes.items()]
    if from_store:
        shown = "; ".join(f"{d}: {', '.join(k[:4])}{' ...' if len(k) > 4 else ''}"
                          for d, k in list(from_store.items())[:SHOWN])
        notes.append(f"{sum(map(len, from_store.values()))} device features empty or absent in "
                     f"{csv_path(directory, 'devices')} keep the store's values, which tuning from sources reads "
                     f"({shown}{' ...' if len(from_store) > SHOWN else ''}); nitro evaluate on the directory sees them empty")
    return writes, notes


def _recording_provenance(directory: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """Units and sources from the ``device.json`` beside a recording's family folders (as
    under ``datasets/``), for a folder without ``device_features.csv``; none when it is absent
    or unreadable (then the import records none, as for any dataset)."""
    try:
        records = json.loads((directory.parent / "device.json").read_text())
        return {(d, k): (str(r.get("unit", "")), str(r.get("source", "")))
                for d, rec in records.items() for k, r in rec.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _same(old, new) -> bool:
    """Whether a stored device value and a new one agree (numbers: up to float rounding)."""
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        return math.isclose(old, new, rel_tol=1e-9)
    return old == new


def _unmeasured_note(devices: pd.DataFrame, measured: list[str]) -> list[str]:
    """The note naming the ``devices.csv`` rows recorded without measurements here."""
    measured = set(measured)
    names = [d for d in devices.index if d not in measured and any(_device_record(devices, d))]
    if not names:
        return []
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return [f"{len(names)} devices of devices.csv have no measurements here ({shown}): their features and "
            "metadata are recorded, for tuning from sources"]


def _featureless_note(store: Store, devices: pd.DataFrame, records: dict, measured: list[str]) -> list[str]:
    """The note on measured devices whose ``devices.csv`` row gives no device feature (every
    numeric cell empty, where other rows fill some) and of which the store has none either."""
    names = [d for d in measured if d in devices.index and not (records.get(d) or ({},))[0]
             and store.device(d, missing_ok=True) is None]
    if not names or not device_feature_names(devices):      # no feature column at all: nothing left empty
        return []
    return [f"devices {names} have no device feature in devices.csv (every numeric cell empty): their rows are "
            "stored without device features; tune-from-source cannot use them as sources until their features "
            "are written in devices.csv and imported again"]


def _unlisted_note(store: Store, device: str, listed: list[str]) -> str:
    """The note on a measured device that ``devices.csv`` lacks (and the store has no features
    of), with the listed names it may be a misspelling of."""
    hint = did_you_mean(device, listed)
    return (f"device {device!r} has no row in devices.csv{hint}: its rows are stored without device features; "
            "tune-from-source cannot use it as a source until its features are recorded")


def _keep_stored(device: str, kept: dict, new: TrainingRow, stored: TrainingRow | None) -> TrainingRow:
    """``new`` (an imported row: no time for the variants the directory does not time for its
    input) written over ``stored`` (:meth:`TrainingRow.over`: the stored time or failure of each
    variant the directory neither times nor reports failed is kept); what was kept goes to
    ``kept[(device, input)]`` (a batch merged again replaces its entries)."""
    merged = new.over(stored)
    keep = [v for v in merged.times if merged.times[v] != new.times.get(v) or merged.failed.get(v) != new.failed.get(v)]
    if keep:
        kept[(device, new.input_id)] = keep
    else:
        kept.pop((device, new.input_id), None)
    return merged


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


def _spool_measurements(db: sqlite3.Connection, directory: Path,
                        progress: bool = False) -> tuple[list[str], DroppedTimes, int, list[str]]:
    """``measurements.csv`` into table ``meas`` (device, input, variant, time: NULL where not a
    finite, positive number, error: why a run without a time failed, where an ``error`` column
    says); the variants with a time or a failed run, in the order the file first names them
    (the first is the store's default variant), the times dropped, by why, how many rows
    named no device, input or variant (dropped), and the note on columns not read."""
    db.execute("CREATE TABLE meas (device TEXT, input TEXT, variant TEXT, time REAL, error TEXT)")
    found, dropped, unnamed, unread = {}, DroppedTimes(), 0, []
    for chunk in progress_bar(read_csv_chunks(directory, "measurements", CHUNK), enabled=progress,
                              desc=f"reading measurements, {CHUNK:,} lines", unit="chunk"):
        check_measurement_columns(directory, chunk.columns)
        unread = unread or unread_columns_note(directory, chunk.columns)
        named = chunk.dropna(subset=["device", "input", "variant"])   # a row naming nothing is dropped
        unnamed, chunk = unnamed + len(chunk) - len(named), named
        time, bad = run_times(chunk["time_s"], chunk.get(ERROR_COLUMN))    # NaN: stored as NULL
        dropped += bad
        failed = time.isna().to_numpy() & failed_runs(chunk.get(ERROR_COLUMN), len(chunk))
        error = np.where(failed, chunk[ERROR_COLUMN].to_numpy(dtype=object) if failed.any() else None, None)
        found.update(dict.fromkeys(chunk["variant"][time.notna().to_numpy() | failed].unique().tolist()))
        with db:
            db.executemany("INSERT INTO meas VALUES (?, ?, ?, ?, ?)",
                           zip(*(chunk[c].tolist() for c in ("device", "input", "variant")), time.tolist(),
                               error.tolist()))
    db.execute("CREATE INDEX meas_by_device ON meas (device, input)")
    return list(found), dropped, unnamed, unread


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
    unlisted, example = db.execute("SELECT COUNT(DISTINCT input), MIN(input) FROM meas WHERE input NOT IN "
                                   "(SELECT input FROM inputs)").fetchone()
    unmeasured = db.execute("SELECT COUNT(*), MIN(input) FROM inputs WHERE input NOT IN "
                            "(SELECT input FROM meas)").fetchone()
    kept, notes = input_columns(names, n, text, empty)
    cols = {name: f"f{names.index(name)}" for name in kept}
    if kept:
        incomplete = " OR ".join(f"{c} IS NULL" for c in cols.values())
        *missing, dropped = db.execute(f"SELECT {''.join(f'TOTAL({c} IS NULL), ' for c in cols.values())}"
                                       f"TOTAL({incomplete}) FROM inputs").fetchone()
        notes += dropped_inputs_note(kept, missing, int(dropped), n)
        db.execute(f"DELETE FROM inputs WHERE {incomplete}")
    return cols, notes + unlisted_inputs_note(unlisted, example) + unmeasured_inputs_note(*unmeasured)


def _repeated(db: sqlite3.Connection, ids: pd.Series) -> str:
    """An input id that ``ids`` repeats, or that table ``inputs`` already holds."""
    twice = ids[ids.duplicated()]
    if len(twice):
        return twice.iloc[0]
    return next(i for i in ids if db.execute("SELECT 1 FROM inputs WHERE input = ?", (i,)).fetchone())


def _rows(db: sqlite3.Connection, device: str, columns: list[str], features: list[str], variants: list[str]):
    """The device's training rows, in input order: each input's chosen features, and each chosen
    variant's time (the median of its measurements; no time for a variant it has none of, with
    the reason where a failed run gives one)."""
    query = (f"SELECT m.input, m.variant, m.time, m.error, {', '.join('i.' + c for c in columns)} "
             "FROM meas m JOIN inputs i ON i.input = m.input JOIN chosen c ON c.variant = m.variant "
             "WHERE m.device = ? AND (m.time IS NOT NULL OR m.error IS NOT NULL) ORDER BY m.input")
    for input_id, group in itertools.groupby(db.execute(query, (device,)), key=itemgetter(0)):
        samples: dict[str, list[float]] = {}
        errors: dict[str, str] = {}
        for first in group:     # every line of the group holds the input's features
            if first[2] is not None:
                samples.setdefault(first[1], []).append(first[2])
            else:
                errors.setdefault(first[1], first[3])
        times = {v: statistics.median(samples[v]) if v in samples else None for v in variants}
        failed = {v: e for v, e in errors.items() if v not in samples}
        yield TrainingRow(input_id, dict(zip(features, first[4:])), times, failed)


def _device_record(devices: pd.DataFrame, device: str, provenance: dict | None = None) -> tuple[dict, dict]:
    """A device's feature record (its finite numeric columns, and those ``device_features.csv``
    lists for it without a value) and its metadata (its text columns: ``vendor``, ``kind``,
    ``arch``, ...), which the store keeps apart. Units and sources come from
    ``device_features.csv`` where it has them (a ``nitro store export``), else none and "datasheet"."""
    row, names, provenance = devices.loc[device], device_feature_names(devices), provenance or {}
    features = {}
    for k in names:
        unit, source = provenance.get((device, k), ("", "datasheet"))
        if np.isfinite(row[k]) or (device, k) in provenance:
            features[k] = {"value": float(row[k]) if np.isfinite(row[k]) else None, "unit": unit, "source": source}
    metadata = {k: row[k] for k in devices.columns if k not in names and isinstance(row[k], str) and row[k]}
    return features, metadata
