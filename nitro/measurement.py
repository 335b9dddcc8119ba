"""Measuring code variants: the timing policy and the correctness check (the rows they give:
:mod:`nitro.row`).

Policy (``TimingPolicy``): each variant runs ``warmup`` times untimed (the first of those
runs also produces the output that is checked). The variants that passed are then timed in
interleaved rounds (every variant once per round, forwards then backwards), each variant until
it has ``min_repeats`` samples and either ``max_repeats`` samples or ``target_seconds`` of its
own timed work, after which the rounds go on without it: a slow period (another program, a
lost scheduler slice) hits all the variants still timed, not the one timed during it, and a
slow variant costs no more calls than when each variant was timed alone. The recorded time is the fastest sample: interference only adds
time, and one preempted sample cannot move the minimum. When the samples cannot tell the best
variant from a runner-up (:mod:`nitro.noise`: the gap is within the spread of repeated
timings), those variants alone get more rounds, doubling up to ``max_rounds``; a gap below
``tie`` that is known to be below it is a tie. With early stopping the variants are timed one
after the other (Vuduc's rule needs each one's time before choosing the next), then the
undecided ones are re-timed in rounds.
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

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from . import cuda
from .memo import hash_array
from .noise import Verdict, judge


MAX_CALLS_PER_SAMPLE = 100_000     # a timed loop of a short variant holds this many calls at most
UNCOMPARABLE = "wrong result (not comparable with the reference: "   # the check raised: the reason begins so
EXCLUDED = "excluded by constraint"  # the reason recorded for a variant a constraint kept from running


@dataclass(frozen=True)
class TimingPolicy:
    """How variants are timed (see module doc). ``tie``: a relative gap below which the best
    and the runner-up count as tied; ``max_rounds``: the rounds an undecided input's
    contenders may get in all (default ``2 * max_repeats``; ``max_repeats`` re-times nothing);
    ``min_sample``: seconds a timed sample lasts at least: a shorter call is timed as a loop of
    calls on the same arguments (its time: the loop's over the calls), so that the clock's
    resolution and the cost of timing do not decide which of two sub-microsecond variants wins;
    ``exclusive``: each input is timed while no other nitro process on this machine times on the
    same device (:mod:`nitro.device_lock`; False for processes pinned to disjoint cores)."""

    warmup: int = 1
    min_repeats: int = 3
    max_repeats: int = 15
    target_seconds: float = 0.05
    isolate: bool = True
    timeout: float | None = 60.0   # seconds per variant call, when isolated (None or inf: no limit)
    tie: float = 0.03
    max_rounds: int | None = None
    min_sample: float = 1e-5
    exclusive: bool = True

    def __post_init__(self):
        for name in ("warmup", "min_repeats", "max_repeats", "max_rounds"):
            value = getattr(self, name)
            if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
                    or name == "max_rounds" and value is None):
                raise TypeError(f"invalid timing policy: {name} is a whole number, got {value!r}")
        for name in ("target_seconds", "tie", "timeout", "min_sample"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
                    or name == "timeout" and value is None):
                raise TypeError(f"invalid timing policy: {name} is a number of seconds"
                                f"{' or None' if name == 'timeout' else ''}, got {value!r}")
        for name in ("isolate", "exclusive"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"invalid timing policy: {name} is True or False, got {getattr(self, name)!r}")
        if self.warmup < 1 or self.min_repeats < 1 or self.max_repeats < self.min_repeats:
            raise ValueError(f"invalid timing policy {self}: warmup and min_repeats must be at least 1 "
                             "and max_repeats at least min_repeats")
        for name in ("target_seconds", "min_sample"):
            if not (math.isfinite(getattr(self, name)) and getattr(self, name) >= 0):
                raise ValueError(f"invalid timing policy {self}: {name} must be a finite number ≥ 0")
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"invalid timing policy: timeout is a positive number of seconds (None or inf: no "
                             f"limit), got {self.timeout}")
        if not 0 <= self.tie < 1:
            raise ValueError(f"invalid timing policy {self}: tie must be in [0, 1)")
        if self.max_rounds is not None and self.max_rounds < self.max_repeats:
            raise ValueError(f"invalid timing policy {self}: max_rounds must be at least max_repeats")

    @property
    def round_cap(self) -> int:
        """Rounds an undecided input's contenders may get in all."""
        return self.max_rounds if self.max_rounds is not None else 2 * self.max_repeats


def outputs_match(result: Any, reference: Any) -> bool:
    """Whether a variant's output equals the reference output (exact for integers,
    a relative tolerance for floating point): arrays and numbers, SciPy sparse matrices, pandas
    objects (labels too), and dicts, tuples and lists of any of these, compared item by item."""
    if hasattr(reference, "tocsr") and hasattr(reference, "nnz"):          # SciPy sparse
        if not (hasattr(result, "tocsr") and result.shape == reference.shape):
            return False
        diff = abs(result.tocsr().astype(float) - reference.tocsr().astype(float))
        scale = abs(reference).max() if reference.nnz else 0.0
        return bool(diff.nnz == 0 or diff.max() <= 1e-6 * scale)
    if type(reference).__module__.startswith("pandas"):
        labels = [getattr(reference, k, None) for k in ("index", "columns")]
        if type(result) is not type(reference) or any(
                mine is not None and not mine.equals(getattr(result, k)) for k, mine in zip(("index", "columns"), labels)):
            return False
        if getattr(reference, "ndim", 1) == 2:    # a frame: column by column (text beside numbers)
            return result.shape == reference.shape and all(
                outputs_match(result.iloc[:, j], reference.iloc[:, j]) for j in range(reference.shape[1]))
        from pandas.api.types import is_numeric_dtype
        if is_numeric_dtype(reference.dtype) and is_numeric_dtype(result.dtype):
            return outputs_match(result.to_numpy(), reference.to_numpy())
        return bool(result.equals(reference))    # text, categories, dates: equal, NaN where the reference's
    if isinstance(reference, dict):
        return isinstance(result, dict) and result.keys() == reference.keys() and all(
            outputs_match(result[k], reference[k]) for k in reference)
    if isinstance(reference, (tuple, list)) and not _numeric(reference):
        return (isinstance(result, (tuple, list)) and len(result) == len(reference)
                and all(outputs_match(x, y) for x, y in zip(result, reference)))
    a, b = np.asarray(result), np.asarray(reference)
    if a.shape != b.shape:
        return False
    if np.issubdtype(a.dtype, np.floating) or np.issubdtype(b.dtype, np.floating):
        # relative to the reference's magnitude, as for sparse matrices: a fixed absolute 1e-9 let
        # zeros pass for outputs of 1e-10 (a wrong variant was labelled best)
        scale = float(np.abs(b[np.isfinite(b)]).max(initial=0.0))     # (objects: a TypeError, "not comparable")
        return bool(np.allclose(a, b, rtol=1e-6, atol=1e-6 * scale, equal_nan=True))
    return bool(np.array_equal(a, b))


def arrays_digest(args: tuple) -> bytes:
    """A digest of the NumPy arrays among ``args`` (what a variant working in place would change;
    other arguments are not looked into)."""
    digest = hashlib.blake2b(digest_size=16)
    for a in args:
        if isinstance(a, np.ndarray) and not a.dtype.hasobject:
            hash_array(digest, a)
    return digest.digest()


def _numeric(items) -> bool:
    """Whether a tuple or list holds numbers only (compared as one array)."""
    return all(isinstance(x, (int, float, complex, np.number, bool, np.bool_)) for x in items)


class Tally:
    """Counts variant calls and their seconds while they run; with a shared ``slot`` (four
    doubles: index of the variant running or -1, calls started, calls, seconds) a parent
    process watching a measurement worker sees which variant is running, and that it still
    makes progress, without a message per call (a message would wake the parent on the
    measured cores)."""

    def __init__(self, index: Mapping[str, int] | None = None, slot=None):
        self.calls, self.seconds = 0, 0.0
        self.index, self.slot = index or {}, slot
        self.numbers: dict[str, int] = {}       # calls per timed sample of a short variant (else 1)

    def run(self, name: str, fn: Callable, args: tuple) -> tuple[float, Any]:
        """``(seconds per call, output)`` of one sample: ``fn(*args)`` called once, or
        ``numbers[name]`` times in a loop; what it raises propagates."""
        if self.slot is not None:
            self.slot[0] = self.index.get(name, -1)
            self.slot[1] += 1
        number = self.numbers.get(name, 1)
        start = time.perf_counter()
        try:
            for _ in range(number):
                result = fn(*args)
        finally:
            elapsed = time.perf_counter() - start
            self.calls += number
            self.seconds += elapsed
            if self.slot is not None:
                self.slot[0] = -1
                self.slot[2], self.slot[3] = self.calls, self.seconds
        return elapsed / number, result

    def calibrate(self, name: str, fn: Callable, args: tuple, min_sample: float) -> None:
        """Set the calls per sample of ``name`` so that a sample lasts ``min_sample`` (timeit's
        autorange, a few loops long); for a call that long already, nothing is called."""
        for _ in range(4):
            number = self.numbers.get(name, 1)
            per_call, _ = self.run(name, fn, args)
            if per_call * number >= min_sample or number >= MAX_CALLS_PER_SAMPLE:
                return
            self.numbers[name] = min(MAX_CALLS_PER_SAMPLE, math.ceil(1.5 * min_sample / max(per_call, 1e-9)))

    def add_to(self, counts: dict | None):
        if counts is not None:
            counts["calls"] = counts.get("calls", 0) + self.calls
            counts["seconds"] = counts.get("seconds", 0.0) + self.seconds


def run_rounds(fns: Mapping[str, Callable], args: tuple, samples: dict[str, list[float]], policy: TimingPolicy,
               tally: Tally, rounds: int | None = None, bound: float | None = None) -> dict[str, str]:
    """Time ``fns`` in interleaved rounds — every function once per round, forwards then
    backwards (a, b, b, a, ...) — appending to ``samples``. A slow period then hits all of
    them alike instead of the one that happened to be timed during it. ``rounds`` more
    rounds of every function; by default each function until it has ``min_repeats`` samples
    and either ``max_repeats`` samples or ``target_seconds`` of its own timed work (the
    others go on without it). With a race ``bound`` (one function: Vuduc's racing) the rounds
    stop once its fastest of at least ``min_repeats`` samples exceeds it. A function that
    raises is dropped; returns ``{name: reason}`` for those."""
    names = list(fns)
    failed: dict[str, str] = {}
    spent = dict.fromkeys(names, 0.0)
    done = 0
    while names:
        if rounds is not None and done >= rounds:
            break
        if rounds is None:
            names = [n for n in names if not _enough(samples[n], spent[n], policy)]
            if not names:
                break
            if bound is not None and len(samples[names[0]]) >= policy.min_repeats and min(samples[names[0]]) > bound:
                break
        turn = names if done % 2 == 0 else names[::-1]
        for name in turn:
            try:
                elapsed, _ = tally.run(name, fns[name], args)
            except Exception as exc:  # a failing variant must not stop tuning
                failed[name] = f"raised {type(exc).__name__}: {exc}"
                continue
            samples[name].append(elapsed)
            spent[name] += elapsed
        for name in failed:
            if name in names:
                names.remove(name)
                samples.pop(name, None)
        done += 1
    return failed


def _enough(samples: Sequence[float], spent: float, policy: TimingPolicy) -> bool:
    """Whether a variant has the samples the policy asks of it in its first rounds."""
    have = len(samples)
    return have >= policy.max_repeats or (have >= policy.min_repeats and spent >= policy.target_seconds)


def time_interleaved(fns: Sequence[Callable], args: tuple, policy: TimingPolicy) -> list[float]:
    """Median seconds per call of each of ``fns(*args)`` (warm-up already done), timed in
    interleaved rounds (:func:`run_rounds`): the typical speed of each, compared fairly on a
    machine whose speed drifts. What a function raises propagates."""
    samples: dict[str, list[float]] = {str(k): [] for k in range(len(fns))}
    failed = run_rounds(dict(zip(samples, fns)), args, samples, policy, Tally())
    if failed:
        raise RuntimeError(f"time_interleaved: function {', '.join(failed.values())}")
    return [float(np.median(samples[str(k)])) for k in range(len(fns))]


def retime_undecided(variants: Mapping[str, Callable], args: tuple, samples: dict[str, list[float]],
                     policy: TimingPolicy, tally: Tally, cap: int | None = None) -> tuple[Verdict, dict[str, str]]:
    """Judge the samples (:func:`nitro.noise.judge`) and, while the input is undecided, time
    its contenders (the best and the variants not separated from it) in more interleaved
    rounds, doubling their rounds up to ``cap`` (``policy.round_cap``); returns the last
    verdict and the variants that raised meanwhile."""
    failed: dict[str, str] = {}
    cap = policy.round_cap if cap is None else cap
    verdict = judge(samples, policy.tie)
    while verdict.status == "undecided":
        batch = [v for v in verdict.contenders if len(samples[v]) < cap]
        if len(batch) < 2 or verdict.best not in batch:   # the best has had its rounds: as sure as it gets
            break
        have = min(len(samples[v]) for v in batch)
        more = min(max(policy.min_repeats, have), cap - max(len(samples[v]) for v in batch))
        if more <= 0:
            break
        failed.update(run_rounds({v: variants[v] for v in batch}, args, samples, policy, tally, rounds=more))
        verdict = judge(samples, policy.tie)
    verdict.rounds = max((len(s) for s in samples.values()), default=0)
    return verdict, failed


def measure_input(variants: Mapping[str, Callable], names: Sequence[str], args: tuple, *, reference: Any,
                  check: Callable, policy: TimingPolicy, early_stopping=None,
                  tally: Tally | None = None) -> tuple[dict, dict, Verdict]:
    """Measure ``names`` (in this order) on one input in this process; return ``(times,
    failed, verdict)`` for them. Each variant is first run ``warmup`` times, its first output
    checked against ``reference`` (without one, the first variant that succeeds gives it).
    Then every variant that passed is timed in interleaved rounds (:func:`run_rounds`) — or,
    with ``early_stopping``, one after the other, raced, until Vuduc's rule says the rest can
    be skipped — and the undecided contenders are re-timed (:func:`retime_undecided`; up to
    ``max_repeats`` rounds in all with early stopping, which trades certainty for calls). The
    time of a variant is its fastest sample: interference only adds time."""
    from .search import SKIPPED
    tally = tally or Tally()
    failed: dict[str, str] = {}
    samples: dict[str, list[float]] = {}
    have_reference = reference is not None
    before = arrays_digest(args)
    for name in names:
        measured = [min(s) for s in samples.values() if s]
        if early_stopping is not None and measured and early_stopping.should_stop(measured, len(names)):
            failed[name] = SKIPPED
            continue
        try:
            for k in range(policy.warmup):
                elapsed, result = tally.run(name, variants[name], args)
                if k == 0:
                    output = result
        except Exception as exc:  # a failing variant must not stop tuning
            failed[name] = f"raised {type(exc).__name__}: {exc}"
            continue
        if arrays_digest(args) != before:    # every later call would see another input: none is timed
            why = f"not timed: {name!r} changed its array arguments in place (give it a copy of them)"
            return ({v: None for v in names}, {**{v: why for v in names}, name: "changed its array arguments in "
                    "place: the other variants would be timed on another input (give it a copy of them)"},
                    judge({}, policy.tie))
        if have_reference:
            try:
                same = bool(check(output, reference))
            except Exception as exc:  # e.g. None against an array: not the same result, not a crash
                failed[name] = f"{UNCOMPARABLE}{type(exc).__name__}: {exc})"[:500]
                continue
            if not same:
                failed[name] = "wrong result"
                continue
        if not have_reference:
            reference, have_reference = output, True
        if elapsed < policy.min_sample:       # a call too short to time alone: timed in loops
            try:
                tally.calibrate(name, variants[name], args, policy.min_sample)
            except Exception as exc:
                failed[name] = f"raised {type(exc).__name__}: {exc}"
                continue
        samples[name] = []
        if early_stopping is not None:
            bound = early_stopping.race_bound(min(measured, default=None))
            failed.update(run_rounds({name: variants[name]}, args, samples, policy, tally, bound=bound))
    if early_stopping is None:
        failed.update(run_rounds({v: variants[v] for v in samples}, args, samples, policy, tally))
    # early stopping spends fewer calls for a little certainty: its contenders get max_repeats rounds at most
    cap = policy.max_repeats if early_stopping is not None else None
    verdict, raised = retime_undecided(variants, args, samples, policy, tally, cap)
    failed.update(raised)
    times = {v: (min(samples[v]) if samples.get(v) else None) for v in names}
    return times, failed, verdict


def measure_variants(variants: Mapping[str, Callable], args: tuple, *, reference: Any = None,
                     reference_variant: str | None = None, check: Callable | None = None,
                     allowed: Mapping[str, bool] | None = None,
                     policy: TimingPolicy = TimingPolicy(), early_stopping=None,
                     order: list[str] | None = None, counts: dict | None = None,
                     verdict: dict | None = None) -> tuple[dict, dict]:
    """Run and time every variant on ``args``; return ``(times, failed)``.

    ``reference`` is the expected output; without one the output of ``reference_variant``
    is the reference. ``check(result, reference) -> bool`` replaces :func:`outputs_match`.
    Variants with ``allowed[name] is False`` (excluded by a constraint) are not run.
    ``early_stopping`` (:class:`nitro.search.EarlyStopping`) races repetitions and may stop
    before every variant is measured, trying variants in ``order``; ``counts`` accumulates
    the variant calls made (``"calls"``) and their seconds; ``verdict`` is filled with how
    sure the measurement is (:class:`nitro.noise.Verdict` as a dict).
    """
    check = check or outputs_match
    failed: dict[str, str] = {}
    order = list(order or variants)
    if reference is None and reference_variant is not None:
        order.remove(reference_variant)
        order.insert(0, reference_variant)
    runnable = [v for v in order if allowed is None or allowed.get(v, True)]
    failed.update({n: EXCLUDED for n in order if n not in runnable})
    if policy.isolate and not cuda.driver_loaded():   # CUDA does not survive a fork
        from .measurement_worker import measure_isolated

        def in_worker(names, slot, guard):
            return measure_input({n: guard(fn) for n, fn in variants.items()}, names, args, reference=reference,
                                 check=check, policy=policy, early_stopping=early_stopping,
                                 tally=Tally({n: k for k, n in enumerate(names)}, slot))
        got, why, judged = measure_isolated(in_worker, runnable, policy.timeout, counts=counts)
    else:
        tally = Tally()
        got, why, judged = measure_input(variants, runnable, args, reference=reference, check=check, policy=policy,
                                         early_stopping=early_stopping, tally=tally)
        tally.add_to(counts)
    failed.update(why)
    if verdict is not None:
        verdict.update(judged.to_dict())
    return {v: got.get(v) for v in variants}, failed
