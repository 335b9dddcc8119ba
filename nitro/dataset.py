"""Training sets: rows of measurements turned into arrays a learner can fit.

A :class:`Measurements` table holds, for any number of devices, each input's features and
each variant's time — whether it came from the store or from a dataset directory in the
``devices.csv`` / ``inputs.csv[.gz]`` / ``measurements.csv[.gz]`` layout.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .measurement import TrainingRow


@dataclass
class Measurements:
    """``times``: DataFrame indexed by (device, input) with one column per variant (NaN = not
    measured or failed); ``inputs``: input features indexed by input; ``devices``: device
    features indexed by device (numeric columns only)."""

    times: pd.DataFrame
    inputs: pd.DataFrame
    devices: pd.DataFrame

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
        return Measurements(times.sort_index(), inputs.sort_index(), devices)

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
        inputs = pd.DataFrame.from_dict(feats, orient="index", columns=features).sort_index()
        inputs.index.name = "input"
        return cls(times, inputs, devices if devices is not None else pd.DataFrame())


def _read_csv(directory: Path, stem: str) -> pd.DataFrame:
    for name in (f"{stem}.csv", f"{stem}.csv.gz"):
        if (directory / name).exists():
            try:
                return pd.read_csv(directory / name)
            except (ValueError, OSError, EOFError) as exc:   # ParserError, EmptyDataError, bad gzip, encoding
                raise ValueError(f"{directory / name}: not a readable CSV file: {exc}") from None
    raise FileNotFoundError(f"{directory} has no {stem}.csv or {stem}.csv.gz")


def load_dataset_dir(directory) -> Measurements:
    """Read a measurement directory (``devices``, ``inputs``, ``measurements`` CSV files)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"dataset directory {directory} does not exist")
    meas = _read_csv(directory, "measurements")
    need = {"device", "input", "variant", "time_s"}
    if not need <= set(meas.columns):
        raise ValueError(f"{directory}/measurements: needs columns {sorted(need)}, has {list(meas.columns)}")
    meas["time_s"] = pd.to_numeric(meas["time_s"], errors="coerce")
    meas.loc[~np.isfinite(meas["time_s"]) | (meas["time_s"] <= 0), "time_s"] = np.nan
    meas = meas.dropna(subset=["device", "input", "variant"])   # a row naming nothing is dropped
    for col in ("device", "input", "variant"):
        meas[col] = meas[col].astype(str)
    times = meas.pivot_table(index=["device", "input"], columns="variant", values="time_s",
                             aggfunc="median")
    times.columns.name = None
    inputs = _read_csv(directory, "inputs")
    if "input" not in inputs.columns:
        raise ValueError(f"{directory}/inputs: needs an 'input' column")
    inputs["input"] = inputs["input"].astype(str)
    inputs = inputs.set_index("input")
    inputs = inputs.apply(pd.to_numeric, errors="coerce")
    inputs = inputs.loc[:, inputs.notna().any()]
    bad = ~np.isfinite(inputs.to_numpy(dtype=float)).all(axis=1)
    inputs = inputs[~bad]
    devices = _read_csv(directory, "devices")
    if "device" not in devices.columns:
        raise ValueError(f"{directory}/devices: needs a 'device' column")
    devices["device"] = devices["device"].astype(str)
    devices = devices.set_index("device")
    meta = devices[[c for c in ("vendor", "kind") if c in devices.columns]]
    devices = devices.drop(columns=meta.columns).apply(pd.to_numeric, errors="coerce")
    devices = pd.concat([devices, meta], axis=1)
    times = times[times.index.get_level_values(1).isin(inputs.index)]
    return Measurements(times.sort_index(), inputs.sort_index(), devices)
