"""Side-by-side comparison of selectors (``nitro evaluate --methods svm,regression,...``).

For every selector named in :data:`nitro.learn.SELECTORS` and every device of the main group:

* **on-device**: fitted on that device's training inputs, scored on its test inputs;
* **cross-device**: fitted on the other devices' rows ``[input ∘ device features]`` (the
  CV-DFS-selected device features by default, the same for every selector), scored on the
  held-out device's test inputs with its device features as constants.

Each reports the mean % of the exhaustive optimum, Vuduc's Δmiss (share of inputs whose
choice is not the fastest) and Δerr (mean slow-down of the choice − 1), the fitting time, and
the dispatch time of the exported :class:`nitro.SelectorModel` (one input, NumPy).

Cross-device, the SVM is fitted with fixed ``C = 1, γ = "scale"`` (as the paper's full-set
SVM baseline in :mod:`nitro.evaluate`): its grid search over the stacked rows of all sources
would cost minutes per target; every other selector runs with its defaults.
"""
from __future__ import annotations

import time

import numpy as np

from .learn import SELECTORS, delta_err, delta_miss, fit_selector, make_selector, predict_index
from .learn.kron import varying_columns
from .metrics import fraction_of_optimum
from .model import SelectorModel
from .transfer.cvdfs import cv_dfs
from .transfer.data import TransferData, concatenate, stack_times
from .transfer.prepare import Prepared


def _dispatch_seconds(model: SelectorModel, x: np.ndarray, calls: int = 200) -> float:
    row = x[None, :]
    model.predict_index(row)
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls // 5):
            model.predict_index(row)
        samples.append((time.perf_counter() - start) / (calls // 5))
    return float(np.median(samples))


def _score(est, X_test, times, model, x_dispatch) -> dict:
    chosen = predict_index(est, X_test)
    return {"percent": 100.0 * fraction_of_optimum(times, chosen), "delta_miss": delta_miss(times, chosen),
            "delta_err": delta_err(times, chosen), "dispatch_s": _dispatch_seconds(model, x_dispatch)}


CROSS_PARAMS = {"svm": {"C_grid": (1.0,), "gamma_grid": ("scale",)}}


def _fit(name, X, T, names, input_features, device_features=None, params=None):
    start = time.perf_counter()
    est = fit_selector(make_selector(name, **(params or {})), X, T)
    fit_s = time.perf_counter() - start
    model = SelectorModel.from_estimator(est, input_features, device_features=device_features, variants=names)
    return est, model, fit_s


def compare_selectors(data: TransferData, main: list[int], train: np.ndarray, test: np.ndarray,
                      names: list[str], cross_features: str = "cvdfs", max_size: int = 3,
                      n_jobs: int | None = None, progress: bool = False) -> dict:
    """Scores of each selector in ``names`` on each device of ``main`` (see module doc)."""
    unknown = [n for n in names if n not in SELECTORS]
    if unknown:
        raise ValueError(f"unknown selectors {unknown}; known: {sorted(SELECTORS)}")
    if cross_features not in ("cvdfs", "all"):
        raise ValueError(f"cross_features must be 'cvdfs' or 'all', not {cross_features!r}")
    variants = list(data.variants)
    on, cross, feats_used = {n: {} for n in names}, {n: {} for n in names}, {}
    for t in main:
        dev = data.devices[t]
        tr = train[np.isfinite(data.times[t, train]).any(axis=1)]
        te = test[np.isfinite(data.times[t, test]).all(axis=1)]       # scored where it timed every variant
        times = data.times[t, te]
        sources = [s for s in main if s != t]
        prep = Prepared.build(data, sources, train, extra_devices=[t])
        if cross_features == "cvdfs":
            used = cv_dfs(prep, max_size=max_size, n_jobs=n_jobs, progress=progress).features
            cols = [data.device_features.index(f) for f in used]
        else:
            cols = varying_columns(prep.D, prep.sources, prep.features)
        feats_used[dev] = [data.device_features[c] for c in cols]
        Xs, Ts = stack_times(data, sources, prep.train, cols)
        X_cross = concatenate(data.X[te], data.D[t, cols])
        for n in names:
            est, model, fit_s = _fit(n, data.X[tr], data.times[t, tr], variants, data.input_features)
            on[n][dev] = {**_score(est, data.X[te], times, model, data.X[te[0]]), "fit_s": fit_s}
            est, model, fit_s = _fit(n, Xs, Ts, variants, data.input_features,
                                     {data.device_features[c]: float(data.D[t, c]) for c in cols},
                                     CROSS_PARAMS.get(n))
            cross[n][dev] = {**_score(est, X_cross, times, model, data.X[te[0]]), "fit_s": fit_s}

    def summary(res):
        return {n: {k: float(np.mean([r[k] for r in res[n].values()]))
                    for k in ("percent", "delta_miss", "delta_err", "fit_s", "dispatch_s")} for n in names}

    return {"selectors": names, "cross_features": cross_features, "device_features_used": feats_used,
            "on_device": on, "cross_device": cross,
            "summary": {"on_device": summary(on), "cross_device": summary(cross)}}


def format_comparison(r: dict) -> str:
    head = (f"{'selector':<12}{'% opt':>7}{'Δmiss':>7}{'Δerr':>7}{'fit s':>8}  |"
            f"{'% opt':>7}{'Δmiss':>7}{'Δerr':>7}{'fit s':>8}  |{'dispatch µs':>12}")
    lines = [f"selectors side by side (means over {len(next(iter(r['on_device'].values())))} held-out devices; "
             f"cross-device device features: {r['cross_features']})",
             f"{'':<12}{'on-device':^29}  |{'cross-device':^29}  |", head]
    for n in r["selectors"]:
        a, b = r["summary"]["on_device"][n], r["summary"]["cross_device"][n]
        lines.append(f"{n:<12}{a['percent']:>7.1f}{a['delta_miss']:>7.2f}{a['delta_err']:>7.3f}{a['fit_s']:>8.2f}  |"
                     f"{b['percent']:>7.1f}{b['delta_miss']:>7.2f}{b['delta_err']:>7.3f}{b['fit_s']:>8.2f}  |"
                     f"{1e6 * b['dispatch_s']:>12.0f}")
    return "\n".join(lines)
