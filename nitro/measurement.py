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

GPU code variants are measured in this process, automatically: once a process has loaded the
CUDA driver (:func:`nitro.cuda.driver_loaded`: it uploaded inputs, listed a GPU, ran a kernel)
a forked child cannot use CUDA, so every variant would fail with "initialization error". A
fresh worker (spawn/forkserver) would have to import nitro (2.3-2.4 s measured on this 2-core
machine, against 17-30 ms for a fork), create its own context and receive inputs that live in
the parent's GPU memory, which pycuda arrays cannot be pickled to carry; in-process costs
nothing. The price: a GPU variant that hangs is not timed out, and one that faults takes the
tuner with it (a CUDA fault also poisons the whole context, so no worker could go on with it).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import cuda


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

    def time_vector(self, variants: Sequence[str]) -> list[float]:
        """Seconds of each of ``variants``, NaN where it failed, was skipped or is unknown."""
        return [math.nan if self.times.get(v) is None else self.times[v] for v in variants]

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


def time_call(fn: Callable, args: tuple, policy: TimingPolicy, bound: float | None = None,
              counts: dict | None = None) -> float:
    """Median seconds per call of ``fn(*args)`` under ``policy`` (warm-up already done).
    With a race ``bound``, repetitions stop once the fastest of at least ``min_repeats``
    samples exceeds it: a single sample can be slow by chance (a thread pool waking up),
    and racing on it records a wrong time and so a wrong label."""
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
        if bound is not None and len(samples) >= policy.min_repeats and min(samples) > bound:
            break
    if counts is not None:
        counts["calls"] = counts.get("calls", 0) + len(samples)
        counts["seconds"] = counts.get("seconds", 0.0) + spent
    return float(np.median(samples))


def time_interleaved(fns: Sequence[Callable], args: tuple, policy: TimingPolicy) -> list[float]:
    """Median seconds per call of each of ``fns(*args)`` (warm-up already done), timed in
    turns, forwards then backwards (a, b, b, a, ...), until each has ``min_repeats`` samples
    and either ``max_repeats`` or ``target_seconds`` of timed work per function. A machine
    whose speed drifts (other tenants, clock changes) then slows every function alike, so
    the ratio of two medians compares them fairly; timed one after the other, seconds apart,
    they would not be."""
    samples: list[list[float]] = [[] for _ in fns]
    spent = 0.0
    while len(samples[0]) < policy.max_repeats:
        turn = range(len(fns)) if len(samples[0]) % 2 == 0 else reversed(range(len(fns)))
        for k in turn:
            start = time.perf_counter()
            fns[k](*args)
            elapsed = time.perf_counter() - start
            samples[k].append(elapsed)
            spent += elapsed
        if len(samples[0]) >= policy.min_repeats and spent >= policy.target_seconds * len(fns):
            break
    return [float(np.median(s)) for s in samples]


def measure_one(fn: Callable, args: tuple, policy: TimingPolicy, reference: Any, have_reference: bool,
                check: Callable, early_stopping=None, times: Mapping[str, float | None] | None = None,
                n_total: int = 0, counts: dict | None = None) -> tuple[float | None, str | None, Any]:
    """``(median seconds, failure reason, output)`` of one variant: skipped when
    ``early_stopping`` says the ``times`` measured so far (of ``n_total``) suffice, raced
    against the best of them, checked against ``reference`` when there is one."""
    from .search import SKIPPED
    valid = [t for t in (times or {}).values() if t is not None]
    if early_stopping is not None and valid and early_stopping.should_stop(valid, n_total):
        return None, SKIPPED, None
    try:
        start = time.perf_counter()
        result = fn(*args)
        for _ in range(policy.warmup - 1):
            fn(*args)
        if counts is not None:
            counts["calls"] = counts.get("calls", 0) + policy.warmup
            counts["seconds"] = counts.get("seconds", 0.0) + time.perf_counter() - start
    except Exception as exc:  # a failing variant must not stop tuning
        return None, f"raised {type(exc).__name__}: {exc}", None
    if have_reference and not check(result, reference):
        return None, "wrong result", None
    bound = early_stopping.race_bound(min(valid, default=None)) if early_stopping is not None else None
    return time_call(fn, args, policy, bound=bound, counts=counts), None, result


def measure_variants(variants: Mapping[str, Callable], args: tuple, *, reference: Any = None,
                     reference_variant: str | None = None, check: Callable | None = None,
                     allowed: Mapping[str, bool] | None = None,
                     policy: TimingPolicy = TimingPolicy(), early_stopping=None,
                     order: list[str] | None = None, counts: dict | None = None) -> tuple[dict, dict]:
    """Run and time every variant on ``args``; return ``(times, failed)``.

    ``reference`` is the expected output; without one the output of ``reference_variant``
    is the reference. ``check(result, reference) -> bool`` replaces :func:`outputs_match`.
    Variants with ``allowed[name] is False`` (excluded by a constraint) are not run.
    ``early_stopping`` (:class:`nitro.search.EarlyStopping`) races repetitions and may stop
    before every variant is measured, trying variants in ``order``; ``counts`` accumulates
    the variant calls made (``"calls"``) and their seconds.
    """
    check = check or outputs_match
    times: dict[str, float | None] = {}
    failed: dict[str, str] = {}
    order = list(order or variants)
    if reference is None and reference_variant is not None:
        order.remove(reference_variant)
        order.insert(0, reference_variant)
    runnable = [v for v in order if allowed is None or allowed.get(v, True)]
    failed.update({n: "excluded by constraint" for n in order if n not in runnable})
    if policy.isolate and not cuda.driver_loaded():   # CUDA does not survive a fork
        from .measurement_worker import measure_isolated
        got, why = measure_isolated(variants, runnable, args, reference=reference, check=check, policy=policy,
                                    early_stopping=early_stopping, counts=counts)
        failed.update(why)
        return {v: got.get(v) for v in variants}, failed
    have_reference = reference is not None
    for name in order:
        if name not in runnable:
            times[name] = None
            continue
        seconds, reason, result = measure_one(variants[name], args, policy, reference, have_reference, check,
                                              early_stopping, times, len(runnable), counts)
        times[name] = seconds
        if reason is not None:
            failed[name] = reason
        elif not have_reference:
            reference, have_reference = result, True
    return {v: times[v] for v in variants}, failed
