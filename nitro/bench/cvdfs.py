"""CV-DFS speed: nitro's shared-eigendecomposition search against the same exhaustive search
with every Kronecker kernel ridge model fitted from scratch (a dense solve per subset and
temporary target), on a measurement directory. The reference is timed on a few sampled fits
and extrapolated to the full search; the sampled fits' predictions are checked to agree."""
from __future__ import annotations

import os
import platform
import time

import numpy as np

from ..dataset import load_dataset_dir
from ..evaluate import split
from ..learn.kron import device_kernel, rbf
from ..transfer.cvdfs import LAMBDA, cv_dfs, subsets_upto
from ..transfer.prepare import Prepared


def _scratch_fit(prep: Prepared, temp: int, subset: list[int], lam: float) -> np.ndarray:
    """Predictions for ``temp`` on the training inputs by a direct solve of the full
    (inputs·sources)² Kronecker system, the inputs' weights on its ridge: what CV-DFS would
    cost without the shared basis."""
    rest = [s for s in prep.sources if s != temp]
    Kd, kd = device_kernel(prep.D[:, subset], rest, temp)
    Kx = rbf(prep.grid.X, prep.grid.X, prep.grid.gamma_x)
    Y = prep.grid.Y[:, rest, :]                                   # (n, m, v)
    mu = Y.mean(axis=(0, 1))
    n, m, v = Y.shape
    K = np.kron(Kd, Kx)                                           # device-major blocks
    ridge = np.tile(lam / prep.grid.sw ** 2, m)                   # λ·W⁻¹ on every source's block
    alpha = np.linalg.solve(K + np.diag(ridge), (Y - mu).transpose(1, 0, 2).reshape(n * m, v))
    return np.kron(kd[None, :], Kx) @ alpha + mu


def bench_cvdfs(dataset: str, target: str | None = None, max_size: int = 3, seed: int = 0,
                reference_fits: int = 2, n_jobs: int | None = None) -> dict:
    data, idx, _, train, _, _ = split(load_dataset_dir(dataset), seed=seed)
    t = data.device_index(target) if target else idx[0]
    if t not in idx:
        raise ValueError(f"target {target!r} is not one of the evaluated devices {[data.devices[i] for i in idx]}")
    sources = [s for s in idx if s != t]
    prep = Prepared.build(data, sources, train, extra_devices=[t])
    result = cv_dfs(prep, max_size=max_size, n_jobs=n_jobs, progress=False)
    fits = result.models_trained
    rng = np.random.default_rng(seed)
    cand = subsets_upto(prep.features, min(max_size, len(prep.features)))
    worst, spent = 0.0, 0.0
    for _ in range(reference_fits):
        temp = sources[rng.integers(len(sources))]
        subset = list(cand[rng.integers(len(cand))])
        start = time.perf_counter()
        slow = _scratch_fit(prep, temp, subset, LAMBDA)
        spent += time.perf_counter() - start
        rest = [s for s in prep.sources if s != temp]
        fast = prep.grid.predict_train(*prep.grid.dual(rest, *device_kernel(prep.D[:, subset], rest, temp), LAMBDA))
        worst = max(worst, float(np.abs(fast - slow).max()))
    reference = spent / reference_fits * fits
    return {
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "dataset": str(dataset), "target": data.devices[t], "sources": [data.devices[s] for s in sources],
        "n_train": int(len(prep.train)), "candidate_features": len(prep.features), "max_size": max_size,
        "fits": fits, "nitro_seconds": result.seconds,
        "reference_seconds_extrapolated": reference, "reference_fits_timed": reference_fits,
        "ratio": result.seconds / reference, "max_prediction_difference": worst,
        "selected_features": result.features,
    }


def format_cvdfs(r: dict) -> str:
    return "\n".join([
        f"CV-DFS for target {r['target']} from {len(r['sources'])} sources, {r['n_train']} training inputs, "
        f"{r['candidate_features']} candidate features, subsets up to {r['max_size']} ({r['machine']})",
        f"nitro (shared eigendecomposition): {r['fits']} fits in {r['nitro_seconds']:.1f} s",
        f"from-scratch fits (reference):     {r['reference_seconds_extrapolated']:.0f} s "
        f"(extrapolated from {r['reference_fits_timed']} timed fits)",
        f"ratio nitro / reference:           {r['ratio']:.5f}",
        f"largest difference between the two fits' predictions: {r['max_prediction_difference']:.2e}",
    ])
