"""Measuring code variants: the timing policy, the correctness check, the training row.

Policy (``TimingPolicy``): each variant runs ``warmup`` times untimed (the first of those
runs also produces the output that is checked), then is timed call by call with
``time.perf_counter`` until it has ``min_repeats`` samples and either ``max_repeats``
samples or ``target_seconds`` of timed work; the recorded time is the median sample.
A variant that raises, or whose output differs from the reference output (the default
variant's, or a user-supplied reference), is recorded as failed with the reason and can
never be the best variant of that input.

Isolation (``isolate=True``, the default): the variants of each input run in a forked
worker process (:mod:`nitro.measurement_worker`), so one that segfaults or runs longer than
``timeout`` seconds is failed with the reason ("killed by SIGSEGV", "timed out after 60 s")
instead of taking the tuner down; the cost is one fork per input (17-30 ms measured on a
loaded 2-core machine, under 10% of the default policy's timing work).
``isolate=False`` measures in this process.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 1
    min_repeats: int = 3
    max_repeats: int = 15
    target_seconds: float = 0.05
    isolate: bool = True
    timeout: float | None = 60.0   # seconds per variant and input, when isolated

    def __post_init__(self):
        if self.warmup < 1 or self.min_repeats < 1 or self.max_repeats < self.min_repeats:
            raise ValueError(f"invalid timing policy {self}")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"invalid timing policy {self}: timeout must be positive or None")


@dataclass
class TrainingRow:
    """Everything measured for one input on one device."""

    input_id: str
    features: dict[str, float]
    times: dict[str, float | None]
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def best(self) -> str | None:
        valid = {v: t for v, t in self.times.items() if t is not None and math.isfinite(t)}
        return min(valid, key=valid.get) if valid else None

    def to_dict(self) -> dict:
        return {"input": self.input_id, "features": self.features, "times": self.times,
                "failed": self.failed, "best": self.best}

    @classmethod
    def from_dict(cls, data: Mapping) -> "TrainingRow":
        """Validate a row read from a store or file (plain data only)."""
        try:
            input_id = data["input"]
            features = {str(k): float(v) for k, v in dict(data["features"]).items()}
            times = {str(k): (None if v is None else float(v)) for k, v in dict(data["times"]).items()}
            failed = {str(k): str(v) for k, v in dict(data.get("failed", {})).items()}
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"malformed training row: {exc!r}") from None
        if not isinstance(input_id, str) or not input_id:
            raise ValueError("malformed training row: 'input' must be a non-empty string")
        bad = [k for k, v in features.items() if not math.isfinite(v)] + \
              [k for k, v in times.items() if v is not None and not (math.isfinite(v) and v >= 0)]
        if bad:
            raise ValueError(f"malformed training row {input_id!r}: {bad} not finite (times: not negative)")
        return cls(input_id, features, times, failed)


def outputs_match(result: Any, reference: Any) -> bool:
    """Whether a variant's output equals the reference output (exact for integers,
    a relative tolerance for floating point)."""
    a, b = np.asarray(result), np.asarray(reference)
    if a.shape != b.shape:
        return False
    if np.issubdtype(a.dtype, np.floating) or np.issubdtype(b.dtype, np.floating):
        return bool(np.allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True))
    return bool(np.array_equal(a, b))


def time_call(fn: Callable, args: tuple, policy: TimingPolicy) -> float:
    """Median seconds per call of ``fn(*args)`` under ``policy`` (warm-up already done)."""
    samples: list[float] = []
    spent = 0.0
    while len(samples) < policy.max_repeats:
        start = time.perf_counter()
        fn(*args)
        elapsed = time.perf_counter() - start
        samples.append(elapsed)
        spent += elapsed
        if len(samples) >= policy.min_repeats and spent >= policy.target_seconds:
            break
    return float(np.median(samples))


def measure_variants(variants: Mapping[str, Callable], args: tuple, *, reference: Any = None,
                     reference_variant: str | None = None, check: Callable | None = None,
                     allowed: Mapping[str, bool] | None = None,
                     policy: TimingPolicy = TimingPolicy()) -> tuple[dict, dict]:
    """Run and time every variant on ``args``; return ``(times, failed)``.

    ``reference`` is the expected output; without one the output of ``reference_variant``
    is the reference. ``check(result, reference) -> bool`` replaces :func:`outputs_match`.
    Variants with ``allowed[name] is False`` (excluded by a constraint) are not run.
    """
    check = check or outputs_match
    times: dict[str, float | None] = {}
    failed: dict[str, str] = {}
    order = list(variants)
    if reference is None and reference_variant is not None:
        order.remove(reference_variant)
        order.insert(0, reference_variant)
    if policy.isolate:
        from .measurement_worker import measure_isolated
        run = [n for n in order if allowed is None or allowed.get(n, True)]
        times, failed = measure_isolated(variants, run, args, reference=reference, check=check, policy=policy)
        failed.update({n: "excluded by constraint" for n in order if n not in run})
        return {v: times.get(v) for v in variants}, failed
    have_reference = reference is not None
    for name in order:
        if allowed is not None and not allowed.get(name, True):
            times[name], failed[name] = None, "excluded by constraint"
            continue
        fn = variants[name]
        try:
            result = fn(*args)
            for _ in range(policy.warmup - 1):
                fn(*args)
        except Exception as exc:  # a failing variant must not stop tuning
            times[name], failed[name] = None, f"raised {type(exc).__name__}: {exc}"
            continue
        if not have_reference:
            reference, have_reference = result, True
        elif not check(result, reference):
            times[name], failed[name] = None, "wrong result"
            continue
        times[name] = time_call(fn, args, policy)
    return {v: times[v] for v in variants}, failed
