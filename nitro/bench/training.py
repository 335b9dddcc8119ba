"""Training cost against quality: exhaustive training versus early stopping plus active
learning, on one benchmark family, measured in the same run and scored on the same test set.

A single train/test draw is noisy at this scale (a few near-tied inputs move the score by a
percent or more), so the comparison is repeated on ``repeats`` independent draws (seeds
``seed, seed + 1, ...``) and the headline ratios are of the totals and of the mean qualities."""
from __future__ import annotations

import platform
import time

import numpy as np

from .. import benchmarks
from ..metrics import fraction_of_optimum
from ..search import EarlyStopping
from ..tuner import Autotuner
from .quality import choices, test_times


def _train(family, train, ids, **tune_options) -> tuple:
    cv = family.make_code_variant()
    tuner = Autotuner(cv.name, progress=False)
    tuner.set_training_args(train, ids=ids)
    start = time.perf_counter()
    tuner.tune([cv], **tune_options)
    return cv, tuner.counts, time.perf_counter() - start


def _side(counts: dict, seconds: float, quality: float) -> dict:
    return {"variant_calls": counts["calls"], "variant_seconds": counts["seconds"],
            "wall_seconds": seconds, "percent_of_optimum": 100 * quality}


def _one_draw(module, n_train: int, n_test: int, seed: int, budget: float, early_stopping: EarlyStopping) -> dict:
    (train, train_ids), (test, _) = module.train_test_inputs(n_train, n_test, seed)
    reduced_cv, reduced_counts, reduced_s = _train(module, train, train_ids, budget=budget,
                                                   early_stopping=early_stopping)
    full_cv, full_counts, full_s = _train(module, train, train_ids)
    times = test_times(full_cv, test)
    ok = np.isfinite(times).any(axis=1)
    q_full = fraction_of_optimum(times[ok], choices(full_cv, test)[ok])
    q_reduced = fraction_of_optimum(times[ok], choices(reduced_cv, test)[ok])
    return {"seed": seed, "n_test": int(ok.sum()),
            "exhaustive": _side(full_counts, full_s, q_full),
            "reduced": _side(reduced_counts, reduced_s, q_reduced),
            "calls_ratio": reduced_counts["calls"] / full_counts["calls"], "quality_ratio": q_reduced / q_full}


def bench_training(family: str = "histogram", n_train: int = 48, n_test: int = 48, seed: int = 0,
                   budget: float = 0.75, early_stopping: EarlyStopping | None = None, repeats: int = 3) -> dict:
    """Train twice per draw (exhaustive; early stopping + active learning with ``budget``) on
    ``repeats`` train/test draws and compare variant calls, measuring seconds and % of the
    exhaustive optimum on the test inputs."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    module = benchmarks.load(family)
    early_stopping = early_stopping or EarlyStopping()
    runs = [_one_draw(module, n_train, n_test, s, budget, early_stopping) for s in range(seed, seed + repeats)]
    total = {side: {k: float(sum(r[side][k] for r in runs)) for k in ("variant_calls", "variant_seconds", "wall_seconds")}
             for side in ("exhaustive", "reduced")}
    quality = {side: float(np.mean([r[side]["percent_of_optimum"] for r in runs])) for side in ("exhaustive", "reduced")}
    return {
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}",
        "family": family, "n_train": n_train, "n_test": n_test, "budget": budget, "repeats": repeats,
        "early_stopping": vars(early_stopping), "runs": runs,
        "exhaustive": {**total["exhaustive"], "percent_of_optimum": quality["exhaustive"]},
        "reduced": {**total["reduced"], "percent_of_optimum": quality["reduced"]},
        "calls_ratio": total["reduced"]["variant_calls"] / total["exhaustive"]["variant_calls"],
        "seconds_ratio": total["reduced"]["variant_seconds"] / total["exhaustive"]["variant_seconds"],
        "quality_ratio": quality["reduced"] / quality["exhaustive"],
        "worst_quality_ratio": min(r["quality_ratio"] for r in runs),
    }


def format_training(r: dict) -> str:
    label = f"early stopping + active (budget {r['budget']})"
    rows = [(f"draw {run['seed']}: {name}", run[side]) for run in r["runs"]
            for name, side in (("exhaustive search", "exhaustive"), (label, "reduced"))]
    rows += [("all draws: exhaustive search", r["exhaustive"]), (f"all draws: {label}", r["reduced"])]
    width = max(len(name) for name, _ in rows) + 2          # the labels' column fits the longest
    lines = [f"training {r['family']} on {r['n_train']} inputs, scored on {r['n_test']} test inputs, "
             f"{r['repeats']} draws ({r['machine']})", f"{'':<{width}}{'variant calls':>14}{'% of optimum':>14}"]
    lines += [f"{name:<{width}}{side['variant_calls']:>14.0f}{side['percent_of_optimum']:>13.1f}%" for name, side in rows]
    lines.append(f"ratios reduced / exhaustive: calls {r['calls_ratio']:.3f}, seconds {r['seconds_ratio']:.3f}, "
                 f"quality {r['quality_ratio']:.4f} (worst draw {r['worst_quality_ratio']:.4f})")
    return "\n".join(lines)
