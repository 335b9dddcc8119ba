"""Training sets: rows of measurements turned into arrays a learner can fit.

A :class:`Measurements` table holds, for any number of devices, each input's features and
each variant's time — whether it came from the store or from a dataset directory in the
``devices.csv`` / ``inputs.csv[.gz]`` / ``measurements.csv[.gz]`` layout.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from pandas._libs.parsers import STR_NA_VALUES     # the text pandas reads as missing by default

from .row import TrainingRow


def device_feature_names(devices: pd.DataFrame) -> list[str]:
    """The numeric columns of a device table: the features learners may use."""
    types = pd.api.types
    return [c for c in devices.columns if types.is_numeric_dtype(devices[c]) and not types.is_bool_dtype(devices[c])]


@dataclass
class Measurements:
    """``times``: DataFrame indexed by (device, input) with one column per variant (NaN = not
    measured or failed); ``inputs``: input features indexed by input; ``devices``: one row per
    device, whose numeric columns are device features and whose text columns (``vendor``,
    ``kind``, ``arch``, ...) are metadata, never features."""

    times: pd.DataFrame
    inputs: pd.DataFrame
    devices: pd.DataFrame
    notes: list[str] = field(default_factory=list)   # what reading left out, and why

    def __post_init__(self):
        values = self.times.to_numpy(dtype=np.float64)
        bad = np.argwhere(values <= 0)                  # NaN: not measured, +inf: failed
        if len(bad):
            (device, input_id), variant = self.times.index[bad[0][0]], self.times.columns[bad[0][1]]
            raise ValueError(f"{len(bad)} times are zero or negative (first: variant {variant!r} on input "
                             f"{input_id!r} of device {device!r}: {values[tuple(bad[0])]}); a time is a positive "
                             "number of seconds, NaN where not measured, inf where the run failed")

    @property
    def device_feature_names(self) -> list[str]:
        """The numeric columns of :attr:`devices`: the features learners may use."""
        return device_feature_names(self.devices)

    @property
    def metadata_names(self) -> list[str]:
        """The text columns of :attr:`devices` (``vendor``, ``kind``, ``arch``, ...)."""
        return [c for c in self.devices.columns if c not in set(self.device_feature_names)]

    def device_metadata(self, column: str) -> dict[str, str | None] | None:
        """``{device: value}`` of a metadata column (``None`` for an empty cell), or ``None``
        when :attr:`devices` has no such column."""
        if column not in self.devices.columns:
            return None
        if column in self.device_feature_names:
            raise ValueError(f"device column {column!r} is a numeric device feature, not metadata; "
                             f"metadata columns: {self.metadata_names}")
        return {str(d): (None if pd.isna(v) else str(v)) for d, v in self.devices[column].items()}

    @property
    def variants(self) -> list[str]:
        return list(self.times.columns)

    @property
    def device_ids(self) -> list[str]:
        return list(self.times.index.get_level_values(0).unique())

    def for_device(self, device: str) -> pd.DataFrame:
        return self.times.xs(device, level=0)

    def restrict(self, devices=None, variants=None, complete=True) -> "Measurements":
        """Keep some devices and variants, and (``complete``) only inputs timed for every
        kept variant on every kept device."""
        times = self.times
        if devices is not None:
            missing = set(devices) - set(self.device_ids)
            if missing:
                raise ValueError(f"unknown devices {sorted(missing)}; known: {self.device_ids}")
            times = times[times.index.get_level_values(0).isin(devices)]
        if variants is not None:
            missing = set(variants) - set(times.columns)
            if missing:
                raise ValueError(f"unknown variants {sorted(missing)}; known: {list(times.columns)}")
            times = times[list(variants)]
        if complete:
            ok = times.notna().all(axis=1).groupby(level=1).all()
            n_dev = times.index.get_level_values(0).nunique()
            counts = times.groupby(level=1).size()
            keep = ok[ok & (counts.reindex(ok.index) == n_dev)].index
            times = times[times.index.get_level_values(1).isin(keep)]
        inputs = self.inputs.loc[self.inputs.index.isin(times.index.get_level_values(1).unique())]
        devices = self.devices.loc[self.devices.index.isin(times.index.get_level_values(0).unique())]
        return Measurements(times.sort_index(), inputs.sort_index(), devices, list(self.notes))

    @classmethod
    def from_rows(cls, rows_by_device: dict[str, list[TrainingRow]], variants: list[str],
                  features: list[str], devices: pd.DataFrame | None = None) -> "Measurements":
        records, feats = [], {}
        for device, rows in rows_by_device.items():
            for r in rows:
                records.append({"device": device, "input": r.input_id,
                                **{v: r.times.get(v) for v in variants}})
                feats.setdefault(r.input_id, [r.features.get(f, np.nan) for f in features])
        times = pd.DataFrame.from_records(records, columns=["device", "input", *variants])
        times = times.set_index(["device", "input"]).astype(float).sort_index()
        not_positive = int((times <= 0).to_numpy().sum())   # rows stored before times had to be positive
        times = times.mask(times <= 0)
        inputs = pd.DataFrame.from_dict(feats, orient="index", columns=features).sort_index()
        inputs.index.name = "input"
        return cls(times, inputs, devices if devices is not None else pd.DataFrame(),
                   not_positive_note(not_positive, "stored time"))


IDS = {"device": str, "input": str, "variant": str}   # ids read as written: "007" stays "007", never 7.0


DATASET_STEMS = ("devices", "inputs", "measurements", "device_features")   # the last one optional
FEATURE_COLUMNS = ["device", "feature", "unit", "source"]


def _csv_files(directory: Path, stem: str) -> list[Path]:
    """``<stem>.csv`` and ``<stem>.csv.gz`` in ``directory``, those that exist."""
    return [p for name in (f"{stem}.csv", f"{stem}.csv.gz") if (p := directory / name).is_file()]


def csv_path(directory: Path, stem: str) -> Path:
    """``<stem>.csv`` or ``<stem>.csv.gz`` in ``directory`` (both: an error, as either could be stale)."""
    found = _csv_files(directory, stem)
    if len(found) > 1:
        raise ValueError(f"{directory} has both {stem}.csv and {stem}.csv.gz: remove the one that is not current")
    if not found:
        raise FileNotFoundError(f"{directory} has no {stem}.csv or {stem}.csv.gz")
    return found[0]


def dataset_files(directory: Path) -> list[Path]:
    """The ``devices``, ``inputs`` and ``measurements`` CSV files (plain or gzipped) in ``directory``."""
    return sorted(p for stem in DATASET_STEMS for p in _csv_files(directory, stem))


def refuse_to_overwrite(directory: Path) -> None:
    """Refuse to write a dataset into ``directory`` where one is already (its measurements would
    be replaced, or mixed with the new files)."""
    there = [p.name for p in dataset_files(directory)]
    if there:
        raise ValueError(f"{directory} already holds a dataset ({', '.join(there)}): write to a new directory, "
                         "or remove those files first")


def _read_csv(directory: Path, stem: str, dtype=IDS) -> pd.DataFrame:
    path = csv_path(directory, stem)
    try:
        return read_csv_file(path, dtype)
    except (ValueError, OSError, EOFError) as exc:   # ParserError, EmptyDataError, bad gzip, encoding
        raise ValueError(f"{path}: not a readable CSV file: {exc}") from None


def read_csv_file(path: Path, dtype=IDS) -> pd.DataFrame:
    """A CSV file whose name columns (``dtype`` str) are read as written: only an empty cell is
    missing there (:func:`_missing_cells`); a header naming a column twice is refused."""
    return pd.read_csv(path, dtype=dtype, keep_default_na=False, na_values=_missing_cells(_checked_header(path), dtype))


def _checked_header(path: Path) -> list[str]:
    """The header's column names; a header that names a column twice is refused: pandas would
    rename the second (``cores.1``) and both would be read as different columns."""
    header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0]
    twice = header[header.duplicated()]
    if len(twice):
        raise ValueError(f"column {twice.iloc[0]!r} appears more than once in the header")
    return header.tolist()


def _missing_cells(columns: list[str], dtype) -> dict[str, list[str]]:
    """What each column reads as missing: in a column of names (``dtype`` str) only an empty cell,
    since an input or device may be called "NA", "null" or "None"; in the others pandas' usual
    list ("NA", "NaN", "null", ...)."""
    text = set(columns) if dtype is str else {c for c, t in (dtype or {}).items() if t is str}
    return {c: [""] if c in text else sorted(STR_NA_VALUES) for c in columns}


def read_csv_chunks(directory: Path, stem: str, lines: int):
    """``<stem>.csv[.gz]`` as DataFrames of ``lines`` rows each, so that memory holds one chunk
    whatever the file's size; errors as :func:`_read_csv`'s (a parse error names its line)."""
    path = csv_path(directory, stem)
    try:
        missing = _missing_cells(_checked_header(path), IDS)
        with pd.read_csv(path, dtype=IDS, chunksize=lines, keep_default_na=False, na_values=missing) as reader:
            yield from reader
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable CSV file: {exc}") from None


def load_feature_provenance(directory: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """``{(device, feature): (unit, source)}`` from ``device_features.csv[.gz]``, which ``nitro store
    export`` writes beside ``devices.csv`` so that units and origins (datasheet, query, microbench)
    survive a trip through CSV; empty when the directory has none (a dataset from elsewhere)."""
    if not _csv_files(directory, "device_features"):
        return {}
    table = _read_csv(directory, "device_features", dtype=str)
    if list(table.columns) != FEATURE_COLUMNS:
        raise ValueError(f"{csv_path(directory, 'device_features')}: has the columns {list(table.columns)}, "
                         f"not {FEATURE_COLUMNS}")
    table = table.dropna(subset=["device", "feature"]).fillna("").astype(str)
    return {(d, f): (u, s) for d, f, u, s in table.itertuples(index=False)}


def text_cells(values: pd.Series) -> pd.Series:
    """The non-empty cells of ``values`` (stripped) that do not parse as a number."""
    if pd.api.types.is_numeric_dtype(values):          # parsed as numbers already: none
        return values.iloc[:0].astype(str)
    text = values.dropna().astype(str).str.strip()
    text = text[text != ""]
    return text[pd.to_numeric(text, errors="coerce").isna()]


def is_numeric_column(values: pd.Series) -> bool:
    """Whether every non-empty cell of ``values`` parses as a number."""
    return text_cells(values).empty


def text_column(values: pd.Series) -> pd.Series:
    """``values`` as Python strings, ``None`` for empty cells (object dtype, never numeric)."""
    return pd.Series([None if pd.isna(v) or str(v).strip() == "" else str(v).strip() for v in values],
                     index=values.index, name=values.name, dtype=object)


def close_names(name: str, listed) -> list[str]:
    """The names in ``listed`` that ``name`` may have meant: those equal to it but for case and
    white space (``"tesla_k40m "``), else the closest spelling, if any is close."""
    import difflib
    key = "".join(name.split()).casefold()
    listed = [str(n) for n in listed]
    return [n for n in listed if "".join(n.split()).casefold() == key] or difflib.get_close_matches(name, listed, n=1)


def did_you_mean(name: str, listed) -> str:
    """`` (did you mean 'x'?)`` for :func:`close_names`, or nothing."""
    guesses = close_names(name, listed)
    return f" (did you mean {' or '.join(map(repr, guesses))}?)" if guesses else ""


METADATA_COLUMNS = ("vendor", "kind", "arch")   # always metadata, even when written as numbers


def split_device_columns(devices: pd.DataFrame) -> pd.DataFrame:
    """A device table whose numeric columns are floats (device features) and whose other
    columns are text (metadata: :data:`METADATA_COLUMNS` and any other). A column is metadata as
    soon as one non-empty cell is not a number; coercing it instead would turn it into an
    all-NaN feature that learners see."""
    columns = {c: (pd.to_numeric(devices[c], errors="coerce").astype(float)
                   if c not in METADATA_COLUMNS and is_numeric_column(devices[c]) else text_column(devices[c]))
               for c in devices.columns}
    return pd.DataFrame(columns, index=devices.index)


NUMBER_WITH_UNIT = r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*[^\d\s.+-][^\d]*"   # "900 GB/s", "1.4GHz"


def mixed_column_notes(devices: pd.DataFrame) -> list[str]:
    """Notes on device columns that hold numbers and text (``16 GB``), or only numbers with
    units (``900 GB/s``): read as metadata, so a figure the user meant as a feature would
    otherwise vanish without a word."""
    notes = []
    for c in devices.columns:
        text = text_cells(devices[c])
        if c in METADATA_COLUMNS or not len(text):
            continue
        numbers = pd.to_numeric(devices[c], errors="coerce").notna().sum()
        if numbers:
            notes.append(f"device column {c!r} holds text ({text.iloc[0]!r}) beside {numbers} numbers: read as "
                         "metadata, not a device feature; write plain numbers (one unit per column) to use it")
        elif text.str.fullmatch(NUMBER_WITH_UNIT).all():
            notes.append(f"device column {c!r} holds numbers with units ({text.iloc[0]!r}): read as metadata, "
                         "not a device feature; write plain numbers (the unit in the column's name) to use it")
    return notes


SPARSE_COLUMN = 0.5     # an input-feature column empty on this share of the inputs is left out, not its inputs


def input_columns(names: list[str], n_inputs: int, text: dict[str, str], empty) -> tuple[list[str], list[str]]:
    """The input-feature columns to keep and notes on the others: a column with a cell that is
    not a number (``text``: column -> an example) is no feature, like a device table's text
    columns; a column empty (or non-finite) on at least :data:`SPARSE_COLUMN` of the inputs is
    left out rather than losing those inputs. ``empty``: per column, how many inputs lack it."""
    kept, notes = [], []
    for name, missing in zip(names, empty):
        if name in text:
            notes.append(f"input column {name!r} holds text ({text[name]!r}): not an input feature")
        elif missing >= SPARSE_COLUMN * n_inputs:
            notes.append(f"input column {name!r} is empty or not finite on {missing} of {n_inputs} inputs: left out")
        else:
            kept.append(name)
    return kept, notes


def dropped_inputs_note(names: list[str], missing_per_column, n_dropped: int, n_inputs: int) -> list[str]:
    """A note on the inputs left out for an empty or non-finite feature, by column."""
    if not n_dropped:
        return []
    where = ", ".join(f"{n}: {int(k)}" for n, k in zip(names, missing_per_column) if k)
    return [f"{n_dropped} of {n_inputs} inputs left out: an empty or non-finite input feature ({where})"]


def text_examples(frame: pd.DataFrame) -> dict[str, str]:
    """``{column: a non-numeric cell}`` of the columns of ``frame`` that hold one."""
    return {c: cells.iloc[0] for c in frame.columns if len(cells := text_cells(frame[c]))}


@dataclass
class DroppedTimes:
    """How many ``time_s`` cells held no usable time, by why (summed over a file's chunks)."""
    not_positive: int = 0     # zero or negative: read as failed runs
    empty: int = 0            # empty or NaN
    infinite: int = 0
    text: int = 0
    example: str | None = None    # one text cell, to show

    def __iadd__(self, other: "DroppedTimes") -> "DroppedTimes":
        self.not_positive += other.not_positive
        self.empty += other.empty
        self.infinite += other.infinite
        self.text += other.text
        self.example = self.example if self.example is not None else other.example
        return self

    def notes(self) -> list[str]:
        kinds = [f"{n} {what}" for n, what in ((self.empty, "empty or NaN"), (self.infinite, "infinite"),
                                               (self.text, f"text such as {self.example!r}")) if n]
        no_number = self.empty + self.infinite + self.text
        return not_positive_note(self.not_positive) + (
            [f"{no_number} measurements have a time_s that is no finite number ({', '.join(kinds)}): dropped"]
            if kinds else [])


def run_times(values: pd.Series, errors: pd.Series | None = None) -> tuple[pd.Series, DroppedTimes]:
    """A ``time_s`` column as seconds, NaN where it holds no finite positive number (a failed or
    missing run), and what it dropped, by why; an empty time whose ``error`` cell says why the
    run failed (:func:`failed_runs`) is a failed run, not a dropped cell."""
    time = pd.to_numeric(values, errors="coerce").astype(float)
    words = text_cells(values)
    words = words[words.str.casefold() != "nan"]          # a written NaN: no time, not text
    failed = int((time.isna() & ~values.index.isin(words.index) & failed_runs(errors, len(values))).sum())
    dropped = DroppedTimes(not_positive=int((time <= 0).sum()), empty=int(time.isna().sum()) - len(words) - failed,
                           infinite=int(np.isinf(time).sum()), text=len(words),
                           example=None if words.empty else words.iloc[0])
    return time.where(np.isfinite(time) & (time > 0)), dropped


def not_positive_note(count: int, what: str = "time_s") -> list[str]:
    """The note on measurements whose time is zero or negative (read as failed runs)."""
    return [f"{count} measurements have a {what} of zero or less: read as failed runs"] if count else []


LONG_RUN_S = 1000.0     # a median run above this many seconds suggests times in other units (ns)


def long_times_note(median: float | None) -> list[str]:
    """The note on a ``time_s`` column whose median run exceeds :data:`LONG_RUN_S` seconds:
    read as seconds all the same (a ratio of times scores a choice, so figures of quality do
    not change), but times written in nanoseconds or microseconds look so."""
    if median is None or not median > LONG_RUN_S:
        return []
    return [f"the median time_s is {median:.4g} s ({median / 3600:.3g} hours): times are read as seconds; if they "
            "are in other units (ns, µs), divide them into seconds, so that the times nitro prints mean what they say"]


MEASUREMENT_COLUMNS = ("device", "input", "variant", "time_s")
ERROR_COLUMN = "error"      # optional: why a run without a time failed ("wrong result", "raised ...")


def failed_runs(errors: pd.Series | None, n: int) -> np.ndarray:
    """Which lines an ``error`` column marks as failed runs (a non-empty cell); none without it."""
    if errors is None:
        return np.zeros(n, dtype=bool)
    return (errors.notna() & (errors.astype(str).str.strip() != "")).to_numpy()


def check_measurement_columns(directory, columns) -> None:
    """Refuse a ``measurements`` file without the four columns, pointing at a time column
    given in other units (``time_ms``)."""
    if set(MEASUREMENT_COLUMNS) <= set(columns):
        return
    timed = [c for c in columns if "time_s" not in columns and str(c).casefold().startswith("time")]
    hint = f"; is {timed[0]!r} a time? give it in seconds, as 'time_s'" if timed else ""
    raise ValueError(f"{directory}/measurements: needs columns {sorted(MEASUREMENT_COLUMNS)}, has {list(columns)}{hint}")


def unread_columns_note(directory, columns) -> list[str]:
    """The note on ``measurements`` columns nitro does not read (a ``unit`` or ``std_s`` column:
    times are read from ``time_s``, in seconds, whatever it says)."""
    extra = [str(c) for c in columns if c not in (*MEASUREMENT_COLUMNS, ERROR_COLUMN)]
    return [f"{directory}/measurements: columns {extra} are not read (only {', '.join(MEASUREMENT_COLUMNS)} "
            f"and {ERROR_COLUMN}; time_s in seconds)"] if extra else []


def unnamed_note(count: int) -> list[str]:
    """The note on measurements with an empty device, input or variant cell (dropped)."""
    return [f"{count} measurements name no device, input or variant (an empty cell): dropped"] if count else []


def unlisted_inputs_note(count: int, example: str | None) -> list[str]:
    """The note on inputs that measurements time but ``inputs.csv`` does not list."""
    return ([f"{count} inputs timed in measurements have no row in inputs (such as {example!r}): their "
             "measurements are left out"] if count else [])


def unmeasured_inputs_note(count: int, example: str | None) -> list[str]:
    """The note on inputs that ``inputs.csv`` lists but no measurement names."""
    return ([f"{count} inputs listed in inputs have no measurement (such as {example!r}): left out"]
            if count else [])


def repeated_note(cells: int, most: int) -> list[str]:
    """The note on measurements given more than once for one device, input and variant."""
    return ([f"{cells} device/input/variant triples are timed on more than one row (up to {most}): "
             "each keeps the median of its times"] if cells else [])


def dataset_dir(directory) -> Path:
    """``directory`` as a path, or an error saying what is there instead of a dataset directory."""
    directory = Path(directory)
    if directory.is_dir():
        return directory
    if directory.exists():
        raise NotADirectoryError(f"{directory} is a file: a dataset is a directory of devices, inputs and "
                                 "measurements CSV files")
    raise FileNotFoundError(f"dataset directory {directory} does not exist")


def load_dataset_dir(directory) -> Measurements:
    """Read a measurement directory (``devices``, ``inputs``, ``measurements`` CSV files)."""
    directory = dataset_dir(directory)
    meas = _read_csv(directory, "measurements")
    check_measurement_columns(directory, meas.columns)
    unread = unread_columns_note(directory, meas.columns)
    meas["time_s"], dropped = run_times(meas["time_s"], meas.get(ERROR_COLUMN))
    named = meas.dropna(subset=["device", "input", "variant"])   # a row naming nothing is dropped
    unnamed, meas = len(meas) - len(named), named
    for col in ("device", "input", "variant"):
        meas[col] = meas[col].astype(str)
    # one grouping gives each cell's median (repeated timings) and how many timings it has
    cells = meas.dropna(subset=["time_s"]).groupby(["device", "input", "variant"])["time_s"].agg(["median", "size"])
    times, counts = cells["median"].unstack("variant"), cells["size"]
    times.columns.name = None
    inputs = _read_csv(directory, "inputs")
    if "input" not in inputs.columns:
        raise ValueError(f"{directory}/inputs: needs an 'input' column")
    inputs = inputs.dropna(subset=["input"])           # a row naming no input is dropped, as on import
    inputs["input"] = inputs["input"].astype(str)
    repeated = inputs["input"][inputs["input"].duplicated()]
    if len(repeated):
        raise ValueError(f"{csv_path(directory, 'inputs')}: input {repeated.iloc[0]!r} appears more than once "
                         f"({repeated.nunique()} inputs repeated); give each input one row of features")
    inputs = inputs.set_index("input")
    unlisted = times.index.get_level_values(1).unique().difference(inputs.index)
    values = inputs.apply(pd.to_numeric, errors="coerce").astype(float)
    empty = ~np.isfinite(values.to_numpy())
    kept, notes = input_columns(list(values.columns), len(values), text_examples(inputs), empty.sum(axis=0))
    if not kept:
        raise ValueError(f"{directory}/inputs: no numeric input-feature column ({'; '.join(notes) or 'none given'})")
    empty = empty[:, [values.columns.get_loc(c) for c in kept]]
    bad = empty.any(axis=1)
    notes += dropped_inputs_note(kept, empty.sum(axis=0), int(bad.sum()), len(values))
    unmeasured = inputs.index.difference(meas["input"].unique())
    notes += unread + unlisted_inputs_note(len(unlisted), min(unlisted) if len(unlisted) else None)
    notes += unmeasured_inputs_note(len(unmeasured), min(unmeasured) if len(unmeasured) else None) + unnamed_note(unnamed)
    counts = counts[counts.index.get_level_values("input").isin(values.index[~bad])]    # the others: noted above
    notes += dropped.notes() + repeated_note(int((counts > 1).sum()), int(counts.max()) if len(counts) else 0)
    notes += long_times_note(meas["time_s"].median() if meas["time_s"].notna().any() else None)
    inputs = values.loc[~bad, kept]
    times = times[times.index.get_level_values(1).isin(inputs.index)]
    devices, device_notes = load_devices(directory)
    return Measurements(times.sort_index(), inputs.sort_index(), devices, notes + device_notes)


def load_devices(directory: Path) -> tuple[pd.DataFrame, list[str]]:
    """``devices.csv[.gz]`` indexed by device (numeric columns are features, text is metadata)
    and the notes on columns that mix numbers and text (:func:`mixed_column_notes`)."""
    devices = _read_csv(directory, "devices")
    if "device" not in devices.columns:
        raise ValueError(f"{directory}/devices: needs a 'device' column")
    unnamed = int(devices["device"].isna().sum())
    devices = devices.dropna(subset=["device"])           # a row naming no device is dropped, said so
    devices["device"] = devices["device"].astype(str)
    repeated = devices["device"][devices["device"].duplicated()]
    if len(repeated):
        raise ValueError(f"{csv_path(directory, 'devices')}: device {repeated.iloc[0]!r} appears more than once "
                         f"({repeated.nunique()} devices repeated); give each device one row")
    devices = devices.set_index("device")
    notes = [f"{csv_path(directory, 'devices')}: {unnamed} row{'s' * (unnamed != 1)} without a device name "
             "left out"] if unnamed else []
    return split_device_columns(devices), notes + mixed_column_notes(devices)
