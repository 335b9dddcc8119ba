"""Descriptive figures of a multi-device data set (the paper's Figs. 4–5, Tables 2 and 4)."""
from __future__ import annotations

import numpy as np

from .data import TransferData


def best_variant_histogram(data: TransferData, inputs: np.ndarray) -> dict[str, dict[str, int]]:
    """Per device, how many inputs each variant is fastest on (Table 4)."""
    out = {}
    for d, dev in enumerate(data.devices):
        y = data.labels(d, inputs)
        counts = np.bincount(y[y >= 0], minlength=len(data.variants))
        out[dev] = dict(zip(data.variants, counts.tolist()))
    return out


def architecture_sensitivity(data: TransferData, inputs: np.ndarray) -> dict:
    """Share of inputs whose fastest variant differs between devices: over all devices, and
    for every pair (Figs. 4–5)."""
    labels = np.array([data.labels(d, inputs) for d in range(len(data.devices))])
    differs = (labels != labels[0]).any(axis=0)
    pairs = {}
    for a in range(len(data.devices)):
        for b in range(a + 1, len(data.devices)):
            pairs[f"{data.devices[a]}|{data.devices[b]}"] = float((labels[a] != labels[b]).mean())
    return {"any_pair_differs": float(differs.mean()), "pairwise": pairs}


def device_cosine_similarity(data: TransferData, features: list[int]) -> dict[str, dict[str, float]]:
    """Cosine similarity of devices on the given device features, each standardised over the
    devices (Table 2)."""
    V = data.D[:, features]
    V = (V - np.nanmean(V, axis=0)) / np.where(np.nanstd(V, axis=0) > 0, np.nanstd(V, axis=0), 1.0)
    V = np.nan_to_num(V)
    norm = np.linalg.norm(V, axis=1, keepdims=True)
    S = (V @ V.T) / np.where(norm * norm.T > 0, norm * norm.T, 1.0)
    return {a: {b: float(S[i, j]) for j, b in enumerate(data.devices)} for i, a in enumerate(data.devices)}
