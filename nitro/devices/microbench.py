"""Running the C++ CPU microbenchmarks until their figures are stable.

Each benchmark repeats (at least ``min_repeats``, at most ``max_repeats`` or ``budget_s``
seconds) until the relative spread (interquartile range / median) of its samples is at most
``max_spread``; the median is the figure. A benchmark that never becomes stable is reported
as missing with its spread instead of a number.
"""
from __future__ import annotations

import time

import numpy as np

from .. import _variants

_mb = _variants.microbench

# name -> (function, argument, unit); sizes chosen so that one repetition takes milliseconds
BENCHMARKS = {
    "global_atomic_ns": (_mb.atomic_contended_ns, 1_000_000, "ns per contended atomic increment"),
    "shared_atomic_ns": (_mb.atomic_uncontended_ns, 1_000_000, "ns per uncontended atomic increment"),
    "stream_triad_gbps": (_mb.stream_triad_gbps, 8_000_000, "GB/s"),
    "measured_gflops_dp": (_mb.peak_gflops_dp, 1_000_000, "GFLOP/s"),
    "measured_gflops_sp": (_mb.peak_gflops_sp, 1_000_000, "GFLOP/s"),
}


def run_until_stable(fn, arg, min_repeats: int = 5, max_repeats: int = 40, budget_s: float = 3.0,
                     max_spread: float = 0.10) -> dict:
    """Call ``fn(arg)`` until its results are stable (interquartile range over median at most
    ``max_spread``, after ``min_repeats``), or ``max_repeats`` calls or ``budget_s`` seconds;
    ``{"median", "spread", "repeats"}``, with ``"unstable"`` saying why where they never were,
    so that a busy machine gives a missing feature rather than a wrong number."""
    samples: list[float] = []
    start = time.perf_counter()
    spread = np.inf
    while len(samples) < max_repeats and (len(samples) < min_repeats or time.perf_counter() - start < budget_s):
        samples.append(float(fn(arg)))
        if len(samples) >= min_repeats:
            q1, med, q3 = np.percentile(samples, [25, 50, 75])
            spread = (q3 - q1) / med if med > 0 else np.inf
            if spread <= max_spread:
                break
    med = float(np.median(samples))
    out = {"median": med, "spread": float(spread), "repeats": len(samples)}
    if spread > max_spread:
        out["unstable"] = f"spread {100 * spread:.0f}% after {len(samples)} repeats (machine busy?)"
    return out


def measure_cpu(**kwargs) -> dict:
    """Feature records ``{"value", "unit", "source": "microbench", "spread", "repeats"}``."""
    out = {}
    for name, (fn, arg, unit) in BENCHMARKS.items():
        r = run_until_stable(fn, arg, **kwargs)
        rec = {"value": None if "unstable" in r else r["median"], "unit": unit, "source": "microbench",
               "spread": r["spread"], "repeats": r["repeats"]}
        if "unstable" in r:
            rec["missing"] = r["unstable"]
        out[name] = rec
    return out
