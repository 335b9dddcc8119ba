"""Arrays for cross-device learning: input features, device features and times of every
(device, input, variant), with the feature-concatenation step of multi-task learning."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..dataset import Measurements


@dataclass
class TransferData:
    """A measurement table as the arrays cross-device learning works on: input features ``X``,
    device features ``D`` and the times cube (devices × inputs × variants)."""

    inputs: list[str]
    input_features: list[str]
    X: np.ndarray                   # (n_inputs, d_in)
    devices: list[str]
    device_features: list[str]
    D: np.ndarray                   # (n_devices, d_dev), NaN where unknown
    variants: list[str]
    times: np.ndarray               # (n_devices, n_inputs, n_variants), NaN = not measured/failed

    @classmethod
    def from_measurements(cls, m: Measurements, devices=None, variants=None,
                          device_features=None) -> "TransferData":
        devices = list(devices) if devices is not None else m.device_ids
        variants = list(variants) if variants is not None else m.variants
        inputs = list(m.inputs.index)
        times = np.full((len(devices), len(inputs), len(variants)), np.nan)
        pos = {i: k for k, i in enumerate(inputs)}
        measured = set(m.device_ids)
        for d, dev in enumerate(devices):
            if dev not in measured:          # a target without measurements
                continue
            t = m.for_device(dev).reindex(columns=variants)
            t = t[t.index.isin(pos)]
            times[d, [pos[i] for i in t.index]] = t.to_numpy(dtype=float)
        numeric = m.devices[m.device_feature_names] if len(m.devices) else pd.DataFrame()
        names = list(device_features) if device_features is not None else list(numeric.columns)
        metadata = [f for f in names if f in m.metadata_names]
        if metadata:
            raise ValueError(f"device columns {metadata} are metadata (text), not device features; "
                             f"features: {list(numeric.columns)}")
        D = numeric.reindex(index=devices, columns=names).to_numpy(dtype=float) if names else np.zeros((len(devices), 0))
        return cls(inputs, list(m.inputs.columns), m.inputs.to_numpy(dtype=float), devices, names, D,
                   variants, times)

    def device_index(self, device: str) -> int:
        try:
            return self.devices.index(device)
        except ValueError:
            raise ValueError(f"unknown device {device!r}; known: {self.devices}") from None

    def complete_inputs(self, devices, some: bool = False) -> np.ndarray:
        """Indices of inputs timed for every variant on every one of ``devices`` (``some``: on
        at least one of them)."""
        idx = [self.device_index(d) if isinstance(d, str) else d for d in devices]
        complete = np.isfinite(self.times[idx]).all(axis=2)
        return np.flatnonzero(complete.any(axis=0) if some else complete.all(axis=0))

    def labels(self, device: int, inputs: np.ndarray) -> np.ndarray:
        """Index of the fastest variant of each input on ``device`` (-1 where none is valid)."""
        t = self.times[device, inputs]
        ok = np.isfinite(t).any(axis=1)
        out = np.full(len(inputs), -1)
        out[ok] = np.nanargmin(np.where(np.isfinite(t[ok]), t[ok], np.inf), axis=1)
        return out


def concatenate(X_in: np.ndarray, device_values: np.ndarray) -> np.ndarray:
    """Rows ``[input features ∘ device features]``: ``device_values`` is one vector (appended to
    every row) or one row per input."""
    device_values = np.asarray(device_values, dtype=np.float64)
    if device_values.ndim == 1:
        device_values = np.broadcast_to(device_values, (X_in.shape[0], device_values.size))
    if device_values.shape[0] != X_in.shape[0]:
        raise ValueError(f"{X_in.shape[0]} input rows but {device_values.shape[0]} device rows")
    return np.hstack([X_in, device_values])


def stack_sources(data: TransferData, sources, inputs: np.ndarray, features: list[int]):
    """Training set of feature concatenation over ``sources``: each source's rows are
    ``[input features ∘ that source's selected device features]`` labelled with the source's
    fastest variant. Returns ``(X, y, source_of_row)``."""
    Xs, ys, owners = [], [], []
    for s in sources:
        y = data.labels(s, inputs)
        ok = y >= 0
        Xs.append(concatenate(data.X[inputs[ok]], data.D[s, features]))
        ys.append(y[ok])
        owners.append(np.full(ok.sum(), s))
    return np.vstack(Xs), np.concatenate(ys), np.concatenate(owners)


def stack_times(data: TransferData, sources, inputs: np.ndarray, features: list[int]):
    """Like :func:`stack_sources`, for learners fitted on run times: rows
    ``[input features ∘ source's device features]`` and each row's times (NaN = failed);
    inputs without any valid time on a source are left out. Returns ``(X, times)``."""
    Xs, Ts = [], []
    for s in sources:
        t = data.times[s, inputs]
        ok = np.isfinite(t).any(axis=1)
        Xs.append(concatenate(data.X[inputs[ok]], data.D[s, features]))
        Ts.append(t[ok])
    return np.vstack(Xs), np.vstack(Ts)
