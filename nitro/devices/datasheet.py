"""Published device figures (vendor datasheets and whitepapers, the paper's Table 1).

``datasheet.csv`` beside this module holds one row per device: its id, name, aliases
(``|``-separated names the device reports, e.g. NVML's or ``/proc/cpuinfo``'s), vendor, kind,
the numeric figures below (the unit is part of each column's name and listed in ``UNITS``)
and the ``source`` its figures come from. An empty cell means the figure was not published
where we looked: it is left missing rather than guessed. CPU rows are per package (socket);
their peak FLOP/s are derived from published cores and base clock (the source says how).
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:           # pandas is imported where the table is read, not with this module
    import pandas as pd

PATH = Path(__file__).with_name("datasheet.csv")

# Numeric columns and their units; the column names are nitro's device-feature names.
UNITS: dict[str, str] = {
    "global_mem_gb": "GB",
    "multiprocessors": "SMs/CUs",
    "cores": "cores",
    "threads": "threads",
    "base_clock_mhz": "MHz",
    "boost_clock_mhz": "MHz",
    "mem_bus_width_bits": "bits",
    "l2_cache_kb": "KB",
    "l3_cache_kb": "KB",
    "shared_mem_per_block_kb": "KB",
    "shared_mem_per_sm_kb": "KB",
    "peak_gbps": "GB/s",
    "peak_gflops_sp": "GFLOP/s",
    "peak_gflops_dp": "GFLOP/s",
    "tdp_w": "W",
}
TEXT_COLUMNS = ["id", "name", "aliases", "vendor", "kind"]
KINDS = {"cpu", "gpu"}

# Words that vendors add to reported names and that do not identify the device.
_NOISE = {"r", "tm", "processor", "cpu", "core", "with", "radeon graphics"}


def normalise(name: str) -> str:
    """A device name as nitro's device ids spell it: lower case, ``_`` between words, no
    trademark signs; a ``cpu_`` prefix and a ``_<n>t`` thread-count suffix are dropped."""
    slug = re.sub(r"\((r|tm)\)", " ", name.lower())
    slug = re.sub(r"[^a-z0-9+]+", "_", slug).replace("+", "_plus").strip("_")
    return re.sub(r"^cpu_|_\d+t$", "", slug)


def _tokens(name: str) -> tuple[str, ...]:
    return tuple(t for t in normalise(name).split("_") if t and t not in _NOISE)


def validate(table: pd.DataFrame) -> pd.DataFrame:
    """Check the table's columns, kinds, ids, numbers and sources; return it with numeric
    columns as floats. Raises ``ValueError`` naming the first problem."""
    import pandas as pd      # here, not at import: name matching (_tokens) serves the light run time

    expected = TEXT_COLUMNS + list(UNITS) + ["source"]
    if list(table.columns) != expected:
        raise ValueError(f"datasheet columns {list(table.columns)} differ from {expected}")
    if table["id"].isna().any() or table["id"].duplicated().any():
        dup = table["id"][table["id"].duplicated()].tolist()
        raise ValueError(f"datasheet ids must be present and unique; duplicated: {dup}")
    bad_ids = [i for i in table["id"] if normalise(i) != i]
    if bad_ids:
        raise ValueError(f"datasheet ids must be normalised device names: {bad_ids}")
    bad_kind = table.loc[~table["kind"].isin(KINDS), "id"].tolist()
    if bad_kind:
        raise ValueError(f"datasheet kind must be one of {sorted(KINDS)}: {bad_kind}")
    no_source = table.loc[table["source"].fillna("").str.strip() == "", "id"].tolist()
    if no_source:
        raise ValueError(f"datasheet rows without a source: {no_source}")
    out = table.copy()
    for col in UNITS:
        values = pd.to_numeric(out[col], errors="coerce")
        bad = out.loc[values.isna() & out[col].notna(), "id"].tolist()
        if bad:
            raise ValueError(f"datasheet column {col!r} is not numeric for {bad}")
        if (values.dropna() <= 0).any():
            raise ValueError(f"datasheet column {col!r} has a non-positive figure")
        out[col] = values.astype(float)
    return out


@lru_cache(maxsize=1)
def load() -> pd.DataFrame:
    """The validated datasheet table, one row per device, indexed by position."""
    import pandas as pd

    return validate(pd.read_csv(PATH, dtype=str, keep_default_na=False, na_values=[""]))


def names(row: dict) -> list[str]:
    """The names a datasheet row matches by: its id, name and aliases, and each of those without
    its leading vendor word where two or more words remain (``xeon_gold_6230`` names the
    ``Intel Xeon Gold 6230``: a device id often leaves the vendor out)."""
    given = [n for n in (row["id"], row["name"], *(row["aliases"] or "").split("|")) if n]
    vendor = _tokens(row.get("vendor") or "")
    out = list(given)
    for name in given:
        words = _tokens(name)
        if vendor and words[:len(vendor)] == vendor and len(words) - len(vendor) >= 2:
            out.append(" ".join(words[len(vendor):]))
    return list(dict.fromkeys(out))


def lookup(name: str) -> dict | None:
    """The datasheet row of a device given by id, name, alias or a reported name (e.g.
    ``"Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz"`` or a nitro device id); ``None`` when
    no row matches. A reported name matches a row when it contains all the words of the
    row's id, name or an alias in order; the longest such match wins."""
    query = _tokens(name)
    best, best_len = None, 0
    for row in load().to_dict("records"):
        for candidate in names(row):
            words = _tokens(candidate)
            n = len(words)
            if n and any(query[i:i + n] == words for i in range(len(query) - n + 1)) and n > best_len:
                best, best_len = row, n
    return best


def features(row: dict) -> dict:
    """A datasheet row as a feature record ``name -> {"value", "unit", "source"}`` (empty
    cells left out); ``clock_mhz`` is the boost clock, else the base clock."""
    out = {}
    for col, unit in UNITS.items():
        if row[col] == row[col] and row[col] is not None:      # not NaN
            out[col] = {"value": float(row[col]), "unit": unit, "source": "datasheet"}
    clock = out.get("boost_clock_mhz") or out.get("base_clock_mhz")
    if clock:
        out["clock_mhz"] = dict(clock)
    return out


def _kind_features(kind: str) -> list[str]:
    rows = load()[load()["kind"] == kind]
    return [c for c in UNITS if rows[c].notna().any()]


def fill(record: dict, model: str, kind: str = "cpu") -> dict:
    """``record`` with the features it lacks (absent or without a value) taken from the
    datasheet row of ``model``; figures already present are kept. When ``model`` is not in
    the datasheet nothing is filled, and every datasheet feature of that kind the record
    lacks is marked missing with the reason."""
    out = dict(record)
    lacking = lambda name: out.get(name, {}).get("value") is None  # noqa: E731
    row = lookup(model)
    if row is None or row["kind"] != kind:
        reason = f"{kind} model {model!r} is not in the datasheet"
        for name in _kind_features(kind):
            if lacking(name):
                out[name] = {"value": None, "unit": UNITS[name], "source": "datasheet", "missing": reason}
        return out
    for name, rec in features(row).items():
        if lacking(name):
            out[name] = {**rec, "datasheet_id": row["id"]}
    return out
