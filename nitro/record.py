"""Recording a benchmark family's data set on this machine (``nitro record``), so that the
cross-device flow can run on data nitro measured itself.

Every variant is timed on the family's training and test inputs (``train_test_inputs``, the same
ids on every machine), one input at a time and only at quiet moments: before each input nitro
waits until other work takes under ``wait_share`` of the machine for ``wait_window`` (2 s), and afterwards compares
the machine's CPU time with its own (:mod:`nitro.quiet`); an input during which other work took
more than ``max_foreign`` is measured again (``attempts`` in all) and the quietest attempt kept; a
later run times a disturbed input again and replaces its row only when it found a quieter moment.
The device record's microbenchmarks are taken the same way. Rows go to the store as they are
measured, so a run that stops resumes where it stopped.

Written under ``directory``: ``device.json`` (the device record), ``foreign_load.csv`` (per
computation and input: the other work's share, wall seconds, attempts; a resumed input keeps its
line, and the lines of inputs an earlier run recorded but this one did not export are dropped) and ``<computation>/{devices,inputs,measurements}.csv`` (the code variant's name), read by ``nitro evaluate``,
``nitro store import`` and :func:`nitro.dataset.load_dataset_dir`.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from . import devices, quiet
from .benchmarks import load
from .dataset import read_csv_file
from .file_lock import FileLock
from .measurement import TimingPolicy
from .noise import NoisyMachineWarning
from .progress import progress_bar
from .store import Store
from .store.csv_io import export_computation
from .tuner import Autotuner

LOAD_COLUMNS = ["computation", "input", "foreign_cpu_share", "wall_s", "attempts"]


def _quietest(measure, attempts: int, max_foreign: float, wait_share: float, wait_window: float, wait_timeout: float,
              on_give_up=None):
    """``measure()`` up to ``attempts`` times until other work took at most ``max_foreign`` of
    the CPUs during it; the quietest attempt's result, share, wall seconds, the attempts made,
    and whether a wait for a quiet moment gave up (after that, its later attempts do not wait;
    ``on_give_up(share)`` is called with the share other work kept)."""
    best, gave_up = None, False
    for attempt in range(1, attempts + 1):
        if not gave_up:
            share, gave_up = quiet.wait_until_quiet(wait_share, wait_window, wait_timeout)
            if gave_up and on_give_up is not None:
                on_give_up(share)
        before = quiet.sample()
        result = measure()
        after = quiet.sample()
        share = quiet.foreign_share(before, after)
        if best is None or share < best[1]:
            best = (result, share, after.wall - before.wall)
        if share <= max_foreign:
            break
    return (*best, attempt, gave_up)


DEVICE_RECORD = "device_record"     # foreign_load.csv's line for the device record's microbenchmarks


def _read_load(path: Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame(columns=LOAD_COLUMNS)
    try:
        frame = read_csv_file(path, {"input": str})        # an input called "NA" is a name
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise ValueError(f"{path} cannot be read ({e}): move it away to record again") from None
    if list(frame.columns) != LOAD_COLUMNS:
        raise ValueError(f"{path} has the columns {list(frame.columns)}, not {LOAD_COLUMNS}: move it away to record again")
    return frame


def _owner(directory: Path) -> str | None:
    """The device whose recording ``directory`` holds (its ``device.json``), if any."""
    path = directory / "device.json"
    if not path.exists():
        return None
    try:
        return next(iter(json.loads(path.read_text())), None)
    except (ValueError, AttributeError):
        raise ValueError(f"{path} is not a device record: move it away to record in {directory}") from None


def _write_load(path: Path, lines: list[dict], keep: tuple[str, set] | None = None) -> None:
    """Merge ``lines`` into ``foreign_load.csv`` (a line per computation and input, the newest
    kept), replacing the file whole so that a run killed while writing leaves the old one.
    ``keep=(computation, inputs)``: that computation's lines for other inputs are dropped (a run
    with fewer inputs exports only its own, and the file describes what was exported)."""
    frame = _read_load(path)
    if lines:
        frame = pd.concat([frame, pd.DataFrame(lines, columns=LOAD_COLUMNS)], ignore_index=True)
    if keep is not None:
        frame = frame[(frame["computation"] != keep[0]) | frame["input"].isin(keep[1])]
    frame = frame.drop_duplicates(["computation", "input"], keep="last").sort_values(["computation", "input"])
    part = path.with_name(path.name + ".part")
    frame.to_csv(part, index=False, float_format="%.3f")
    os.replace(part, path)


class RecordingBusyError(OSError):
    """The folder is being recorded by another process."""


@contextlib.contextmanager
def _only_recording(directory: Path):
    """Hold ``directory``'s recording lock (``.nitro-record.lock``, released when this process ends,
    even killed, whatever it forked) or refuse: two recordings at once measure the same inputs
    twice, each one disturbed by the other, and overwrite each other's ``foreign_load.csv``."""
    with FileLock(directory / ".nitro-record.lock", keeps_out="another recording of this folder") as lock:
        if not lock.try_lock():
            raise RecordingBusyError(f"{directory} is being recorded by {lock.holder()}: two recordings "
                               "at once would time the same inputs twice, each disturbed by the other; wait for "
                               "it to end, or stop it (a stopped recording resumes)")
        yield


def record_family(store: Store, family: str, directory, device_id: str | None = None, n_train: int = 48,
                  n_test: int = 48, seed: int = 0, max_foreign: float = 0.05, wait_share: float = 0.10,
                  attempts: int = 5, wait_window: float = 2.0, wait_timeout: float = 600.0,
                  policy: TimingPolicy | None = None, device_record: bool = True,
                  progress: bool = True) -> dict:
    """Record ``family`` here (see the module docstring) under ``device_id`` (default the GPU
    a GPU family runs on, else this machine's CPU) and write it under ``directory``; a summary of what was measured. ``policy``:
    how each variant is timed (default the tuner's); ``wait_window``: the seconds of quiet
    awaited before each input. Give ``store`` a store of its own: a device record already in it
    is kept as it is, and an input counts as recorded only with a row and a line in
    ``foreign_load.csv`` whose share is at most ``max_foreign`` (rows that ``tune()`` left there,
    and inputs a busy machine disturbed, are timed again); a device record is taken again unless
    ``foreign_load.csv`` says it was taken quietly (``device_record=False``: only a missing one, so
    that a run recording several families takes a disturbed one once, not once per family).
    ``directory`` holds one device's recording."""
    if not 0 <= max_foreign <= 1 or not 0 < wait_share <= 1 or attempts < 1 or not wait_window >= 0:
        raise ValueError(f"need 0 <= max_foreign <= 1 (--max-foreign), 0 < wait_share <= 1 (--wait-share), "
                         f"attempts >= 1 (--attempts) and wait_window >= 0 (--wait-window); got {max_foreign}, "
                         f"{wait_share}, {attempts}, {wait_window}")
    if n_train < 1 or n_test < 0:
        raise ValueError(f"need at least one training input (--train) and no negative count of test inputs "
                         f"(--test); got {n_train} and {n_test}")
    started = time.perf_counter()
    module = load(family)
    cv = module.make_code_variant()
    # a GPU family's code variant names its GPU; any other records under this machine's CPU
    cv.device_id = device = device_id or cv.device_id or devices.current_device_id()
    cv.record = False                  # only the quietest attempt is stored, below
    (train, train_ids), (test, test_ids) = module.train_test_inputs(n_train, n_test, seed)
    tuner = Autotuner(cv.name, store=store, policy=policy, progress=False)
    tuner.set_training_args(list(train) + list(test), ids=list(train_ids) + list(test_ids))
    directory = Path(directory)
    owner = _owner(directory)
    if owner not in (None, device):
        raise ValueError(f"{directory} holds the recording of {owner!r}: record {device!r} in another folder")
    store.declare(cv.name, cv.variant_names, cv.feature_names)   # first: a store refusing writes says so at once
    directory.mkdir(parents=True, exist_ok=True)
    with _only_recording(directory):      # a second run here would measure the same inputs, disturbed
        warned = []

        def give_up(share):        # once per run: a machine that stays busy makes every input wait this long
            if not warned:
                warned.append(share)
                warnings.warn(f"{cv.name}: other work kept {share:.0%} of the CPUs for {wait_timeout:g} s "
                              f"(--wait-timeout), above {wait_share:g} (--wait-share): timing anyway, and a disturbed "
                              "input is timed again by a later run. Each later input waits as long: where the machine "
                              "stays busy, lower --wait-timeout or record at a quieter time", NoisyMachineWarning,
                              stacklevel=4)

        settings = (attempts, max_foreign, wait_share, wait_window, wait_timeout, give_up)
        load_path = directory / "foreign_load.csv"
        logged = _read_load(load_path)
        quiet_enough = logged[logged["foreign_cpu_share"] <= max_foreign]
        disturbed = logged[(logged["computation"] == DEVICE_RECORD) & (logged["input"] == device)
                           & (logged["foreign_cpu_share"] > max_foreign)]
        device_share, device_kept = None, False
        if store.device(device, missing_ok=True) is None or (device_record and not disturbed.empty):  # none, or disturbed
            record, device_share, wall, tries, _ = _quietest(lambda: devices.local_record(device), *settings)
            # a busier moment than the stored record's keeps that one
            device_kept = not disturbed.empty and float(disturbed["foreign_cpu_share"].min()) <= device_share
            if not device_kept:
                store.put_device(device, record)
                _write_load(load_path, [{"computation": DEVICE_RECORD, "input": device, "foreign_cpu_share": device_share,
                                         "wall_s": wall, "attempts": tries}])
        # kind, vendor and family beside the features: tune_from_source tells a new family by them
        store.put_device_metadata(device, devices.local_metadata(device, store.device(device)), replace=False)
        (directory / "device.json").write_text(json.dumps({device: store.device(device)}, indent=1))
        # recorded: a stored row and a line quiet enough (a disturbed input is timed again)
        stored = set(store.recorded_inputs(cv.name, device))
        done = stored & set(quiet_enough.loc[quiet_enough["computation"] == cv.name, "input"])
        mine = logged[logged["computation"] == cv.name]
        earlier = dict(zip(mine["input"], mine["foreign_cpu_share"].astype(float)))   # a disturbed input's stored share
        shares, ids, gave_up, kept = [], tuner.training_ids, 0, 0
        for k in progress_bar(range(len(ids)), desc=f"recording {cv.name}", unit="input", enabled=progress):
            if ids[k] in done:
                continue
            rows, share, wall, tries, waited_out = _quietest(
                lambda: tuner.measure(cv, remeasure=True, indices=[k]), *settings)
            gave_up += waited_out
            if ids[k] in stored and earlier.get(ids[k], np.inf) <= share:
                kept += 1               # timed at a busier moment than the stored row: that one stays
                shares.append(earlier[ids[k]])
                continue
            store.put_row(cv.name, device, rows[0])
            shares.append(share)
            _write_load(load_path, [{"computation": cv.name, "input": ids[k], "foreign_cpu_share": share, "wall_s": wall,
                                     "attempts": tries}])
        exported = export_computation(store, cv.name, directory / cv.name, devices=[device], inputs=ids, replace=True)
        _write_load(load_path, [], keep=(cv.name, set(ids)))
        shares = np.array(shares)
        wanted = set(ids)
        best = pd.Series([r.best for r in store.rows(cv.name, device) if r.input_id in wanted and r.best is not None])
        best = best.value_counts()
        return {"device": device, "computation": cv.name, "directory": str(directory / cv.name),
                "inputs": len(ids), "measured": len(shares), "resumed": len(ids) - len(shares),
                "kept_earlier": kept, "device_record_kept_earlier": device_kept,
                "foreign_share_median": float(np.median(shares)) if len(shares) else None,
                "foreign_share_max": float(shares.max()) if len(shares) else None,
                "inputs_above_max_foreign": int((shares > max_foreign).sum()), "inputs_not_waited_for": gave_up,
                "device_record_foreign_share": device_share,
                "best_variants": {str(v): int(n) for v, n in best.items()},
                "measurements": exported["measurements"], "seconds": time.perf_counter() - started}
