"""Every benchmark family on this machine: which variant is best how often on its test
inputs (the paper's Table 4), how close the tuned selector comes to the exhaustive optimum,
and how fast a tuned call (features + dispatch + variant) is against the NumPy/SciPy routine
a user would call instead, all measured in one run."""
from __future__ import annotations

import platform
import time

import numpy as np

from .. import benchmarks
from ..measurement import TimingPolicy, time_call
from ..metrics import fraction_of_optimum
from ..tuner import Autotuner
from .quality import as_args, choices, test_times


def _seconds(fn, item, policy: TimingPolicy) -> float:
    """Median seconds of ``fn`` on one input, after one untimed call; inf if it raises."""
    args = as_args(item)
    try:
        fn(*args)
        return time_call(fn, args, policy)
    except Exception:  # e.g. a solver that does not converge on this input
        return float("inf")


def bench_family(family: str, seed: int = 0, policy: TimingPolicy | None = None, progress: bool = False) -> dict:
    module = benchmarks.load(family)
    policy = policy or TimingPolicy()
    (train, train_ids), (test, _) = module.train_test_inputs(seed=seed)
    cv = module.make_code_variant()
    tuner = Autotuner(cv.name, policy=policy, progress=progress)
    tuner.set_training_args(train, ids=train_ids)
    start = time.perf_counter()
    tuner.tune([cv])
    tuned_s = time.perf_counter() - start
    times = test_times(cv, test, policy)
    ok = np.isfinite(times).any(axis=1)
    names = cv.variant_names
    best = np.nanargmin(np.where(ok[:, None], times, np.inf), axis=1)[ok]
    picked = choices(cv, test)
    tuned_call = np.array([_seconds(cv, item, policy) for item in test])
    base_call = np.array([_seconds(module.baseline, item, policy) for item in test])
    speedup = base_call / tuned_call          # 0 where the tuned choice failed
    fixed = {v: 100 * fraction_of_optimum(times[ok], np.full(int(ok.sum()), i)) for i, v in enumerate(names)}
    return {
        "family": family, "n_train": len(train), "n_test": len(test), "n_scored": int(ok.sum()),
        "best_variant_counts": {v: int((best == i).sum()) for i, v in enumerate(names)},
        "distinct_best_variants": int(len(set(best.tolist()))),
        "tuned_percent_of_optimum": 100 * fraction_of_optimum(times[ok], picked[ok]),
        "best_fixed_variant": max(fixed, key=fixed.get), "best_fixed_percent": max(fixed.values()),
        "speedup_over_baseline": {"median": float(np.median(speedup)), "min": float(speedup.min()),
                                  "share_at_least_as_fast": float((speedup >= 1.0).mean())},
        "tuned_call_failures": int(np.isinf(tuned_call).sum()),
        "tuning_seconds": tuned_s,
    }


def bench_variants(families=None, seed: int = 0, progress: bool = False) -> dict:
    families = list(families or benchmarks.FAMILIES)
    return {"machine": f"{platform.node()} {platform.processor() or platform.machine()}",
            "families": {f: bench_family(f, seed, progress=progress) for f in families}}


def format_variants(r: dict) -> str:
    lines = [f"benchmark families on {r['machine']}", "",
             f"{'family':<11}{'tuned %opt':>11}{'best fixed':>24}{'vs NumPy/SciPy: median':>24}{'>=1x':>7}"
             f"{'best variants':>15}"]
    for f, x in r["families"].items():
        s = x["speedup_over_baseline"]
        lines.append(f"{f:<11}{x['tuned_percent_of_optimum']:>10.1f}%"
                     f"{x['best_fixed_variant'][:15]:>17} {x['best_fixed_percent']:>5.1f}%"
                     f"{s['median']:>23.2f}x{100 * s['share_at_least_as_fast']:>6.0f}%{x['distinct_best_variants']:>15}")
    lines.append("")
    for f, x in r["families"].items():
        counts = ", ".join(f"{v} {n}" for v, n in x["best_variant_counts"].items() if n)
        lines.append(f"{f}: best on {x['n_scored']} test inputs: {counts}")
    return "\n".join(lines)
