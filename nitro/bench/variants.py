"""Every benchmark family on this machine: which variant is best how often on its test
inputs (the paper's Table 4), how close the tuned selector comes to the exhaustive optimum,
and how fast a tuned call (features + dispatch + variant) is against the NumPy/SciPy routine
a user would call instead, all measured in one run."""
from __future__ import annotations

import platform
import time

import numpy as np

from .. import benchmarks
from ..measurement import TimingPolicy, time_interleaved
from ..metrics import fraction_of_optimum
from ..tuner import Autotuner
from .quality import as_args, choices, test_times


def _paired_seconds(fns, item, policy: TimingPolicy) -> list[float]:
    """Median seconds of each of ``fns`` on one input, timed in turns after one untimed call
    each (:func:`nitro.measurement.time_interleaved`); inf for one that raises (e.g. a solver
    that does not converge on this input)."""
    args = as_args(item)
    runs = []
    for k, fn in enumerate(fns):
        try:
            fn(*args)
            runs.append(k)
        except Exception:
            pass
    seconds = [float("inf")] * len(fns)
    if runs:
        for k, t in zip(runs, time_interleaved([fns[k] for k in runs], args, policy)):
            seconds[k] = t
    return seconds


def bench_family(family: str, seed: int = 0, policy: TimingPolicy | None = None, progress: bool = False,
                 n_train: int | None = None, n_test: int = 48) -> dict:
    """Tune ``family`` on its training inputs (``n_train``, else the family's default
    number), then score it on its test inputs: the exhaustive optimum, the tuned choice, and
    the tuned call (features + dispatch + variant) against the NumPy/SciPy routine, the two
    timed in turns on each input."""
    module = benchmarks.load(family, benchmarks.NEEDS + ("baseline",))
    policy = policy or TimingPolicy()
    sizes = {"n_test": n_test} if n_train is None else {"n_train": n_train, "n_test": n_test}
    (train, train_ids), (test, test_ids) = module.train_test_inputs(seed=seed, **sizes)
    cv = module.make_code_variant()
    tuner = Autotuner(cv.name, policy=policy, progress=progress)
    tuner.set_training_args(train, ids=train_ids)
    start = time.perf_counter()
    tuner.tune([cv])
    tuned_s = time.perf_counter() - start
    times = test_times(cv, test, policy)
    ok = np.isfinite(times).any(axis=1)
    names = cv.variant_names
    best_all = np.nanargmin(np.where(np.isfinite(times), times, np.inf), axis=1)
    best = best_all[ok]
    picked = choices(cv, test)
    tuned_call, base_call = np.array([_paired_seconds([cv, module.baseline], item, policy) for item in test]).T
    speedup = base_call / tuned_call          # 0 where the tuned choice failed
    fixed = {v: 100 * fraction_of_optimum(times[ok], np.full(int(ok.sum()), i)) for i, v in enumerate(names)}
    per_input = [{"input": iid, "best": names[b] if k else None, "chosen": names[c],
                  "percent_of_best": 100 * fraction_of_optimum(times[i:i + 1], c[None]) if k else None,
                  "tuned_call_s": float(t), "baseline_s": float(r), "speedup": float(x)}
                 for i, (iid, b, c, k, t, r, x) in enumerate(zip(test_ids, best_all, picked, ok, tuned_call,
                                                                  base_call, speedup))]
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
        "inputs": per_input,
    }


def numpy_simd() -> str:
    """NumPy's version and the SIMD targets it dispatches to here: its sort and bincount are
    the references, and their speed depends on these (NumPy's AVX-512 sort, for one, is
    5x slower than its AVX2 sort on AMD Zen 4; ``NPY_DISABLE_CPU_FEATURES`` switches targets)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
        found = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]
    except ImportError:          # private names: another NumPy may not have them
        found = ["unknown"]
    return f"NumPy {np.__version__} ({', '.join(found) or 'baseline SIMD only'})"


def bench_variants(families=None, seed: int = 0, progress: bool = False, n_train: int | None = None,
                   n_test: int = 48) -> dict:
    families = list(families or benchmarks.FAMILIES)
    if (n_train is not None and n_train < 2) or n_test < 1:
        raise ValueError(f"bench variants needs at least 2 training and 1 test input, got {n_train} and {n_test}")
    return {"machine": f"{platform.node()} {platform.processor() or platform.machine()}", "numpy": numpy_simd(),
            "families": {f: bench_family(f, seed, progress=progress, n_train=n_train, n_test=n_test)
                         for f in families}}


def format_variants(r: dict) -> str:
    fams = r["families"]
    wf = max([len("family"), *map(len, fams)]) + 1                       # columns fit the longest names,
    wv = max([len("best fixed") - 7, *(len(x["best_fixed_variant"]) for x in fams.values())])   # never cut
    lines = [f"benchmark families on {r['machine']}, against {r['numpy']}", "",
             f"{'family':<{wf}}{'tuned %opt':>11}{'best fixed':>{wv + 9}}{'vs NumPy/SciPy: median':>24}{'>=1x':>7}"
             f"{'best variants':>15}"]
    for f, x in fams.items():
        s = x["speedup_over_baseline"]
        lines.append(f"{f:<{wf}}{x['tuned_percent_of_optimum']:>10.1f}%"
                     f"{x['best_fixed_variant']:>{wv + 2}} {x['best_fixed_percent']:>5.1f}%"
                     f"{s['median']:>23.2f}x{100 * s['share_at_least_as_fast']:>6.0f}%{x['distinct_best_variants']:>15}")
    lines.append("")
    for f, x in r["families"].items():
        counts = ", ".join(f"{v} {n}" for v, n in x["best_variant_counts"].items() if n)
        lines.append(f"{f}: best on {x['n_scored']} test inputs: {counts}")
    return "\n".join(lines)
