"""Moving a computation between the store and a dataset directory (CSV layout of
``devices.csv``, ``inputs.csv``, ``measurements.csv``, as in the shared SpMV dataset)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..dataset import Measurements, load_dataset_dir
from ..measurement import TrainingRow
from .redis_store import Store


def export_computation(store: Store, computation: str, directory) -> dict:
    """Write ``computation``'s rows and its devices' features to ``directory``."""
    meta = store.meta(computation)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    meas, inputs, devs = [], {}, []
    for device in store.devices(computation):
        for row in store.rows(computation, device):
            inputs.setdefault(row.input_id, row.features)
            meas.extend({"device": device, "input": row.input_id, "variant": v, "time_s": t}
                        for v, t in row.times.items() if t is not None)
        rec = store.device(device, missing_ok=True) or {}
        features = {k: v.get("value") for k, v in rec.items()}
        metadata = {k: v for k, v in store.device_metadata(device).items() if k not in features}
        devs.append({"device": device, **metadata, **features})
    pd.DataFrame(meas, columns=["device", "input", "variant", "time_s"]).to_csv(
        directory / "measurements.csv", index=False)
    pd.DataFrame([{"input": i, **{f: feats.get(f) for f in meta["features"]}} for i, feats in inputs.items()],
                 columns=["input", *meta["features"]]).to_csv(directory / "inputs.csv", index=False)
    pd.DataFrame(devs).to_csv(directory / "devices.csv", index=False)
    return {"devices": len(devs), "inputs": len(inputs), "measurements": len(meas)}


def _device_record(data: Measurements, device: str) -> tuple[dict, dict]:
    """A device's feature record (its finite numeric columns) and its metadata (its text
    columns: ``vendor``, ``kind``, ``arch``, ...), which the store keeps apart."""
    row = data.devices.loc[device]
    features = {k: {"value": float(row[k]), "unit": "", "source": "datasheet"}
                for k in data.device_feature_names if np.isfinite(row[k])}
    metadata = {k: row[k] for k in data.metadata_names if isinstance(row[k], str) and row[k]}
    return features, metadata


def import_computation(store: Store, computation: str, directory, variants=None, features=None) -> dict:
    """Read a dataset directory into the store under ``computation``. Validation happens
    before anything is written; each device's rows are written in transactions of
    ``Store.BATCH`` rows."""
    data = load_dataset_dir(directory)
    variants = list(variants) if variants else data.variants
    features = list(features) if features else list(data.inputs.columns)
    missing = set(features) - set(data.inputs.columns)
    if missing:
        raise ValueError(f"{directory}: inputs have no features {sorted(missing)}")
    if not variants:
        raise ValueError(f"{directory}: no valid measurement (a finite, positive time_s) of any variant")
    if not features:
        raise ValueError(f"{directory}/inputs: no numeric input-feature column")
    inputs = data.inputs[features]
    rows_by_device, device_records, device_metadata = {}, {}, {}
    for device in data.device_ids:
        times = data.for_device(device).reindex(columns=variants)
        times = times[times.index.isin(inputs.index) & times.notna().any(axis=1)]
        feats = inputs.loc[times.index].to_numpy(dtype=float)
        rows_by_device[device] = [
            TrainingRow(str(iid), dict(zip(features, f.tolist())),
                        {v: (None if not math.isfinite(t) else float(t)) for v, t in zip(variants, tt)})
            for iid, f, tt in zip(times.index, feats, times.to_numpy(dtype=float))]
        if device in data.devices.index:
            device_records[device], device_metadata[device] = _device_record(data, device)
    written = sum(len(r) for r in rows_by_device.values())
    if not written:
        raise ValueError(f"{directory}: no input has both finite features and a measurement")
    store.declare(computation, variants, features)
    for device, rows in rows_by_device.items():
        if device in device_records:
            store.put_device(device, device_records[device], replace=False)
            store.put_device_metadata(device, device_metadata[device])
        store.put_rows(computation, device, rows)
    return {"devices": len(data.device_ids), "rows": written}
