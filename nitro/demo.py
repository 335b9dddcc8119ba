"""The main job: tune the C++ histogram variants on this machine and report how well the
tuned selector chooses on unseen test images, against every fixed variant and random, and
whether the machine was quiet enough for the gaps the tuning had to resolve."""
from __future__ import annotations

import time
import warnings

import numpy as np

from . import devices
from .bench.quality import choices, test_times
from .benchmarks import histogram
from .metrics import fraction_of_optimum, random_fraction
from .noise import NoisyMachineWarning, format_report
from .tuner import autotuner


def run_demo(store=None, n_train: int = 48, n_test: int = 48, seed: int = 0, progress: bool = True) -> dict:
    start = time.perf_counter()
    (train, train_ids), (test, test_ids) = histogram.train_test_inputs(n_train, n_test, seed)
    hist = histogram.make_code_variant()
    hist.record = True
    hist.device_id = devices.current_device_id()
    tuner = autotuner("histogram", store=store, progress=progress)
    tuner.set_training_args(train, ids=train_ids)
    with warnings.catch_warnings():             # the timing report is in the result, printed once
        warnings.simplefilter("ignore", NoisyMachineWarning)
        tuner.tune([hist])
    trained = time.perf_counter()

    names = hist.variant_names
    times = test_times(hist, test, tuner.policy)
    chosen = choices(hist, test)
    selectors = {"tuned": fraction_of_optimum(times, chosen)}
    for i, name in enumerate(names):
        selectors[name] = fraction_of_optimum(times, np.full(len(test), i))
    selectors["random"] = random_fraction(times)
    sample = test[len(test) // 2]
    counts = hist(sample)
    best_counts = np.bincount(np.nanargmin(times, axis=1), minlength=len(names))
    return {
        "device": hist.device_id,
        "store": repr(tuner.store),
        "n_train": len(train), "n_test": len(test),
        "percent_of_optimum": {k: 100.0 * v for k, v in selectors.items()},
        "best_variant_counts": dict(zip(names, best_counts.tolist())),
        "dispatch_example": {"input": test_ids[len(test) // 2], "variant": hist.select(sample),
                             "correct": bool(np.array_equal(counts, histogram.reference(sample)))},
        "timing": tuner.timing_report[hist.name],
        "seconds": {"tune": trained - start, "total": time.perf_counter() - start},
    }


def format_demo(result: dict) -> str:
    lines = [f"nitro demo: histogram on {result['device']} ({result['store']})",
             f"{result['n_train']} training images, {result['n_test']} test images",
             "", f"{'selector':<24}{'% of exhaustive optimum':>26}"]
    for name, pct in sorted(result["percent_of_optimum"].items(), key=lambda kv: -kv[1]):
        lines.append(f"{name:<24}{pct:>25.1f}%")
    lines += ["", "best variant on test inputs: " +
              ", ".join(f"{k} {v}" for k, v in result["best_variant_counts"].items() if v)]
    ex = result["dispatch_example"]
    lines.append(f"dispatch: input {ex['input']} -> {ex['variant']} "
                 f"({'correct' if ex['correct'] else 'WRONG'} counts)")
    lines.append(format_report(result["timing"]))
    lines.append(f"time: tuning {result['seconds']['tune']:.1f} s, total {result['seconds']['total']:.1f} s")
    return "\n".join(lines)
