"""Training at scale: wall time and peak memory of nitro's training steps as the number of
inputs grows, on SYNTHETIC tables (:mod:`nitro.synthetic`; speed only — quality figures of
nitro come from real data).

For each size ``n`` (inputs per device, 4 devices), each step runs in a fresh process so that
its peak resident memory is its own:

* ``tune_fit``: the on-device learner (``SVMSelector`` via ``fit_selector``) on one device's n rows;
* ``tune_from_source``: import into an embedded store, then ``tune_from_source`` with CV-DFS
  for one device from the three others (reading the rows back from the store);
* ``evaluate``: ``nitro evaluate`` with every method (up to ``evaluate_max`` inputs).

Each step reports the exported model's size, its centres (support vectors or kernel centres,
bounded by the dispatch budget of :mod:`nitro.learn.budget`) and its compiled dispatch time
per call. The
reference is the run itself: the growth exponent of time in n (log-log slope from 10k on,
1 = linear) says whether the cost stays near-linear, and the goals are checked beside it.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..transfer.cvdfs import MIN_SOURCES

SIZES = (1000, 3000, 10000, 20000, 30000, 50000, 100000)
STEPS = ("tune_fit", "tune_from_source", "evaluate")
CROSS_DEVICE_STEPS = ("tune_from_source", "evaluate")
CROSS_DEVICE_MIN = MIN_SOURCES + 1     # a target and CV-DFS's sources
GOALS = {"tune_from_source_100k_s": 120.0, "tune_from_source_100k_gb": 4.0, "tune_fit_20k_s": 60.0,
         "tune_fit_100k_s": 300.0, "evaluate_50k_s": 600.0, "exponent": 1.2, "model_mb": 5.0, "dispatch_us": 5.0}


def _dispatch_us(model, X: np.ndarray, calls: int = 2000) -> float:
    """Time per call of the compiled model on single rows of ``X``, as ``nitro bench dispatch`` times it."""
    from .dispatch import median_call_seconds
    return median_call_seconds(model.compiled().predict_one, [([float(v) for v in x],) for x in X[:100]], calls) * 1e6


def _model_figures(model, X: np.ndarray) -> dict:
    centres = model.params.get("centers", model.params.get("support_vectors", []))
    return {"model_kind": model.kind, "model_mb": len(json.dumps(model.to_dict())) / 1e6,
            "dispatch_us": _dispatch_us(model, X), "centres": len(centres)}


def run_step(step: str, directory: str) -> dict:
    """One step on one synthetic table, in this process (see the module docstring)."""
    from ..dataset import load_dataset_dir
    from ..model import SelectorModel
    from ..transfer.data import TransferData
    m = load_dataset_dir(directory)
    start = time.perf_counter()
    out: dict = {}
    if step == "tune_fit":
        from ..learn import SVMSelector, fit_selector
        data = TransferData.from_measurements(m)
        est = fit_selector(SVMSelector(), data.X, data.times[0])
        out["seconds"] = time.perf_counter() - start
        model = SelectorModel.from_estimator(est, data.input_features, variants=data.variants)
        out.update(_model_figures(model, data.X), fit_inputs=int(est.n_fit_inputs_),
                   support_vectors_fitted=int(est.n_support_fitted_))
    elif step == "tune_from_source":
        from ..store import Store
        from ..store.csv_io import import_computation
        from ..transfer.tune import tune_from_source
        store = Store()
        import_computation(store, "synthetic", directory)
        out["import_seconds"] = time.perf_counter() - start
        start = time.perf_counter()
        devices = list(m.device_ids)
        model = tune_from_source(store, "synthetic", m.variants, list(m.inputs.columns), target=devices[-1],
                                 sources=devices[:-1], search_based_dfs=True, progress=False)
        out["seconds"] = time.perf_counter() - start
        out.update(_model_figures(model, m.inputs.to_numpy(dtype=float)))
    elif step == "evaluate":
        from ..evaluate import evaluate
        r = evaluate(m)
        out.update(seconds=time.perf_counter() - start, mean_percent=r["mean"], n_train=r["n_train"])
    else:
        raise ValueError(f"unknown step {step!r}; known: {', '.join(STEPS)}")
    out["peak_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return out


def _in_fresh_process(step: str, directory: Path, data_dir: Path) -> dict:
    code = f"import json; from nitro.bench.scale import run_step; print(json.dumps(run_step({step!r}, {str(directory)!r})))"
    env = {**os.environ, "NITRO_DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"bench scale: step {step} on {directory} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def growth_exponent(sizes, seconds, from_n: int = 10000) -> float | None:
    """Slope of log(time) against log(n) over the sizes ≥ ``from_n`` (``None`` with fewer than two)."""
    pts = [(n, s) for n, s in zip(sizes, seconds) if n >= from_n and s > 0]
    if len(pts) < 2:
        return None
    n, s = np.log(np.array(pts, dtype=float)).T
    return float(np.polyfit(n, s, 1)[0])


def _checked_sizes(sizes) -> list[int]:
    """``sizes`` as ints, each a whole number of at least the synthetic table's minimum: a size
    such as 1.5 is refused as given, not truncated to 1 (and then refused as 1)."""
    import numbers
    from ..synthetic import MIN_INPUTS
    bad = [n for n in sizes if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < MIN_INPUTS]
    if bad or not sizes:
        raise ValueError(f"sizes are whole numbers of inputs, at least {MIN_INPUTS} each, got "
                         f"{', '.join(map(repr, bad)) if bad else 'none'}")
    return [int(n) for n in sizes]


def bench_scale(sizes=SIZES, devices: int = 4, evaluate_max: int = 50000, steps=None, workdir=None,
                seed: int = 0, progress: bool = True) -> dict:
    """Run every step on a synthetic table of each size (see the module docstring)."""
    from ..progress import progress_bar
    from ..synthetic import generate
    steps = list(steps or STEPS)
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise ValueError(f"unknown steps {unknown}; known: {', '.join(STEPS)}")
    cross = [s for s in steps if s in CROSS_DEVICE_STEPS]
    if cross and devices < CROSS_DEVICE_MIN:
        raise ValueError(f"steps {', '.join(cross)} learn a target from its sources by CV-DFS: they need at "
                         f"least {CROSS_DEVICE_MIN} devices (a target and {CROSS_DEVICE_MIN - 1} sources), got "
                         f"devices={devices}; give more devices, or only the step tune_fit")
    sizes = sorted(_checked_sizes(sizes))
    results: dict = {s: {} for s in steps}
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        jobs = [(n, s) for n in sizes for s in steps if not (s == "evaluate" and n > evaluate_max)]
        for n, step in progress_bar(jobs, desc="bench scale", unit="step", enabled=progress):
            table = Path(tmp) / f"synthetic_{n}"
            if not table.exists():
                generate(table, n, devices, seed=seed)
            results[step][n] = _in_fresh_process(step, table, Path(tmp) / f"store_{n}_{step}")
    exponents = {s: growth_exponent(list(r), [v["seconds"] for v in r.values()]) for s, r in results.items()}
    return {"machine": f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores",
            "synthetic": True, "devices": devices, "sizes": sizes, "steps": results,
            "growth_exponent": exponents, "goals": GOALS, "checks": _checks(results, exponents)}


def _checks(results: dict, exponents: dict) -> dict:
    """Each goal that this run measured: ``True`` when met."""
    def at(step, n, key):
        return results.get(step, {}).get(n, {}).get(key)
    checks = {}
    for name, (step, n, key) in {"tune_from_source_100k_s": ("tune_from_source", 100000, "seconds"),
                                 "tune_from_source_100k_gb": ("tune_from_source", 100000, "peak_gb"),
                                 "tune_fit_20k_s": ("tune_fit", 20000, "seconds"),
                                 "tune_fit_100k_s": ("tune_fit", 100000, "seconds"),
                                 "evaluate_50k_s": ("evaluate", 50000, "seconds")}.items():
        if at(step, n, key) is not None:
            checks[name] = at(step, n, key) <= GOALS[name]
    measured = [e for e in exponents.values() if e is not None]
    if measured:
        checks["exponent"] = max(measured) <= GOALS["exponent"]
    models = [v for r in results.values() for v in r.values() if "model_mb" in v]
    if models:
        checks["model_mb"] = max(v["model_mb"] for v in models) <= GOALS["model_mb"]
        checks["dispatch_us"] = max(v["dispatch_us"] for v in models) <= GOALS["dispatch_us"]
    return checks


def format_scale(r: dict) -> str:
    lines = [f"training at scale on SYNTHETIC tables ({r['devices']} devices; {r['machine']})",
             f"{'step':<18}{'inputs':>8}{'seconds':>10}{'peak GB':>9}{'model MB':>10}{'centres':>9}{'dispatch us':>13}"]
    for step, by_n in r["steps"].items():
        for n, v in by_n.items():
            model = (f"{v['model_mb']:>10.2f}{v['centres']:>9}{v['dispatch_us']:>13.2f}" if "model_mb" in v
                     else f"{'':>10}{'':>9}{'':>13}")
            lines.append(f"{step:<18}{n:>8}{v['seconds']:>10.1f}{v['peak_gb']:>9.2f}{model}")
    lines.append("growth exponent of time in n (from 10k): " + ", ".join(
        f"{s} {e:.2f}" if e is not None else f"{s} -" for s, e in r["growth_exponent"].items()))
    lines.append("goals: " + ", ".join(f"{k} {'met' if ok else 'MISSED'}" for k, ok in r["checks"].items()))
    return "\n".join(lines)
