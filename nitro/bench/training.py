"""Training cost against quality: exhaustive training versus early stopping plus active
learning, on one benchmark family, measured in the same run and scored on the same test set."""
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


def bench_training(family: str = "histogram", n_train: int = 48, n_test: int = 48, seed: int = 0,
                   budget: float = 0.5, early_stopping: EarlyStopping | None = None) -> dict:
    """Train twice (exhaustive; early stopping + active learning with ``budget``) and compare
    variant calls, measuring seconds and % of the exhaustive optimum on the test inputs."""
    module = benchmarks.load(family)
    (train, train_ids), (test, _) = module.train_test_inputs(n_train, n_test, seed)
    early_stopping = early_stopping or EarlyStopping()
    reduced_cv, reduced_counts, reduced_s = _train(module, train, train_ids, budget=budget,
                                                   early_stopping=early_stopping)
    full_cv, full_counts, full_s = _train(module, train, train_ids)
    times = test_times(full_cv, test)
    ok = np.isfinite(times).any(axis=1)
    q_full = fraction_of_optimum(times[ok], choices(full_cv, test)[ok])
    q_reduced = fraction_of_optimum(times[ok], choices(reduced_cv, test)[ok])
    return {
        "machine": f"{platform.node()} {platform.processor() or platform.machine()}",
        "family": family, "n_train": len(train), "n_test": int(ok.sum()), "budget": budget,
        "early_stopping": vars(early_stopping),
        "exhaustive": {"variant_calls": full_counts["calls"], "variant_seconds": full_counts["seconds"],
                       "wall_seconds": full_s, "percent_of_optimum": 100 * q_full},
        "reduced": {"variant_calls": reduced_counts["calls"], "variant_seconds": reduced_counts["seconds"],
                    "wall_seconds": reduced_s, "percent_of_optimum": 100 * q_reduced},
        "calls_ratio": reduced_counts["calls"] / full_counts["calls"],
        "seconds_ratio": reduced_counts["seconds"] / full_counts["seconds"],
        "quality_ratio": q_reduced / q_full,
    }


def format_training(r: dict) -> str:
    e, s = r["exhaustive"], r["reduced"]
    return "\n".join([
        f"training {r['family']} on {r['n_train']} inputs, scored on {r['n_test']} test inputs ({r['machine']})",
        f"{'':<36}{'variant calls':>14}{'variant s':>11}{'% of optimum':>14}",
        f"{'exhaustive search':<36}{e['variant_calls']:>14}{e['variant_seconds']:>11.2f}{e['percent_of_optimum']:>13.1f}%",
        f"{'early stopping + active (budget ' + str(r['budget']) + ')':<36}{s['variant_calls']:>14}"
        f"{s['variant_seconds']:>11.2f}{s['percent_of_optimum']:>13.1f}%",
        f"ratios reduced / exhaustive: calls {r['calls_ratio']:.3f}, seconds {r['seconds_ratio']:.3f}, "
        f"quality {r['quality_ratio']:.4f}",
    ])
