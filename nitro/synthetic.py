"""SYNTHETIC multi-device measurement tables, for measuring nitro's speed at scale.

Real tuning databases hold 10⁴–10⁵ inputs per device; the shared real data has 2,843. This
generator writes a table of any size in the dataset layout (``devices.csv``, ``inputs.csv.gz``,
``measurements.csv.gz``, plus a ``README.md`` saying it is synthetic) with the structure that
makes variant selection hard: roofline-style variant costs (compute against memory traffic,
a cache that helps only when the working set fits, occupancy that needs enough parallel
work, launch overheads) over datasheet-like device features, so that the best variant
crosses over with the input and with the device, plus multiplicative timing noise.

Figures of speed may come from these tables; figures of quality must come from real data.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .dataset import refuse_to_overwrite

VARIANTS = ["streaming", "tiled", "cache_blocked", "atomic", "serial_fallback"]
FAMILIES = ["alpha", "beta", "gamma", "delta"]
MIN_INPUTS = 20   # the fewest inputs a table may have: evaluate splits them into train and test


def synthetic_devices(n_devices: int, seed: int = 0) -> pd.DataFrame:
    """``n_devices`` GPU-like devices, two per architecture family (``arch`` metadata), with
    datasheet features spanning an order of magnitude in bandwidth and compute."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_devices):
        fam = FAMILIES[(i // 2) % len(FAMILIES)]
        gen = 1.6 ** ((i // 2) % len(FAMILIES))          # later families are faster
        sm = int(rng.integers(14, 40) * gen)
        clock = float(rng.uniform(700, 1800))
        rows.append({
            "device": f"synthetic_{fam}_{i}", "vendor": "synthetic", "kind": "gpu", "arch": fam,
            "multiprocessors": sm, "cores": sm * 64, "clock_mhz": round(clock),
            "peak_gbps": round(float(rng.uniform(150, 400) * gen), 1),
            "peak_gflops_sp": round(sm * 64 * 2 * clock / 1e3),
            "l2_cache_kb": int(512 * 2 ** rng.integers(1, 6)),
            "atomic_gops": round(float(rng.uniform(5, 60) * gen), 1),
            "launch_us": round(float(rng.uniform(3, 9)), 2),
        })
    return pd.DataFrame(rows)


def synthetic_inputs(n_inputs: int, n_features: int = 12, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """``n_inputs`` inputs: the latent properties the costs use (work size, arithmetic
    intensity, irregularity, working set, conflicts) and ``n_features`` observed features
    (noisy, correlated views of them; features beyond the first eight are nuisance)."""
    if n_features < 8:
        raise ValueError(f"n_features must be at least 8, got {n_features}")
    rng = np.random.default_rng(seed + 1)
    n = n_inputs
    lat = {"work": 10 ** rng.uniform(3, 9, n),              # elements processed
           "intensity": 10 ** rng.uniform(-1.5, 2, n),       # flops per byte
           "irregular": rng.beta(1.2, 2.5, n),               # 0 regular .. 1 scattered
           "reuse": 10 ** rng.uniform(0, 2, n),              # how often each byte is touched
           "conflicts": 10 ** rng.uniform(-3, 0, n)}         # share of colliding updates
    lat["working_set_kb"] = lat["work"] * 8 / lat["reuse"] / 1024
    noise = lambda: np.exp(rng.normal(0, 0.05, n))          # noqa: E731 (observation noise)
    cols = {"size": lat["work"] * noise(), "flops_per_byte": lat["intensity"] * noise(),
            "row_variance": (lat["irregular"] * 10) ** 2 * noise(), "max_degree": 1 + lat["irregular"] * 1e3 * noise(),
            "working_set_kb": lat["working_set_kb"] * noise(), "reuse": lat["reuse"] * noise(),
            "distinct_keys": 1.0 / lat["conflicts"] * noise(), "nnz_per_row": 1 + lat["reuse"] * noise()}
    for j in range(8, n_features):
        cols[f"aux_{j}"] = rng.lognormal(0, 1, n) * (cols["size"] ** rng.uniform(-0.2, 0.2))
    frame = pd.DataFrame(cols)
    frame.insert(0, "input", [f"s{i:06d}" for i in range(n)])
    return frame, lat


def variant_times(lat: dict, dev: pd.Series, rng: np.random.Generator, noise: float = 0.03) -> np.ndarray:
    """Times (inputs × :data:`VARIANTS`) of every variant on device ``dev``: roofline terms per
    variant, each with its own weakness, times lognormal noise of relative spread ``noise``."""
    work, ai, irr = lat["work"], lat["intensity"], lat["irregular"]
    bw, flops = dev["peak_gbps"] * 1e9, dev["peak_gflops_sp"] * 1e9
    launch = dev["launch_us"] * 1e-6
    nbytes = work * 8
    occupancy = np.minimum(1.0, work / (dev["cores"] * 32.0))        # too little work idles the device
    fits = np.clip(dev["l2_cache_kb"] / lat["working_set_kb"], 0.0, 1.0)
    roof = lambda b, f: np.maximum(b / bw, f / flops) / occupancy    # noqa: E731
    t = np.column_stack([
        roof(nbytes * (1 + 3 * irr), nbytes * ai) + launch,                                   # streaming
        roof(nbytes * (1 + irr), nbytes * ai * 0.6) * (1 + 4 * irr) + 3 * launch,             # tiled
        roof(nbytes * (1 - 0.8 * fits) * (1 + 2 * irr), nbytes * ai * 1.1) + 2 * launch,      # cache_blocked
        roof(nbytes * 0.6, nbytes * ai) + work * lat["conflicts"] / (dev["atomic_gops"] * 1e9) + launch,  # atomic
        nbytes * (1 + ai) / (bw * 0.02) + 0.2 * launch,                                       # serial_fallback
    ])
    return t * np.exp(rng.normal(0, noise, t.shape))


def generate(directory, n_inputs: int, n_devices: int = 4, n_features: int = 12, seed: int = 0,
             noise: float = 0.03) -> dict:
    """Write a synthetic dataset directory; returns its size. Every device times every input."""
    if n_inputs < MIN_INPUTS or n_devices < 1:
        raise ValueError(f"need at least {MIN_INPUTS} inputs and 1 device, got {n_inputs} and {n_devices}")
    directory = Path(directory)
    refuse_to_overwrite(directory)
    directory.mkdir(parents=True, exist_ok=True)
    devices = synthetic_devices(n_devices, seed)
    inputs, lat = synthetic_inputs(n_inputs, n_features, seed)
    rng = np.random.default_rng(seed + 2)
    frames = []
    for _, dev in devices.iterrows():
        t = variant_times(lat, dev, rng, noise)
        frames.append(pd.DataFrame({"device": dev["device"], "input": np.repeat(inputs["input"].to_numpy(), len(VARIANTS)),
                                    "variant": np.tile(VARIANTS, n_inputs), "time_s": t.ravel()}))
    devices.to_csv(directory / "devices.csv", index=False)
    inputs.to_csv(directory / "inputs.csv.gz", index=False, compression={"method": "gzip", "compresslevel": 1})
    pd.concat(frames).to_csv(directory / "measurements.csv.gz", index=False, float_format="%.6e",
                             compression={"method": "gzip", "compresslevel": 1})
    (directory / "README.md").write_text(
        f"# SYNTHETIC measurements (nitro.synthetic, seed {seed})\n\n"
        f"{n_inputs} generated inputs x {n_devices} generated devices x {len(VARIANTS)} variants. "
        "Roofline-style model times with noise, for measuring speed at scale only: "
        "no quality figure may be taken from this table.\n")
    return {"directory": str(directory), "inputs": n_inputs, "devices": n_devices, "variants": len(VARIANTS),
            "measurements": n_inputs * n_devices * len(VARIANTS), "synthetic": True}
