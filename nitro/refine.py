"""Refining mode: a code variant that keeps learning on the device it runs on.

A model built elsewhere (``tune_from_source``: other devices' data) is right on most inputs
of a new device and unsure on some. In refining mode a small, bounded share of production
calls, those on inputs where the current model is least sure, run the plausible variants
instead of only the model's choice, each timed; those timings become target rows, are
recorded in the store from a background thread, and every ``refit_every`` new rows (or an
eighth of the rows so far, when that is more) the model is refitted from them, also in the
background, and swapped in atomically.

**Which calls explore.** Three steps, cheapest first:

1. An integer counter: only every ``stride``-th call is a *candidate* (``stride`` =
   ⌊``quantile`` / ``budget``⌋), and only while the budget allows one more explored call.
   Every other call dispatches exactly as without refining, plus one counter step.
2. A candidate call is scored by the current model (:meth:`nitro.SelectorModel.scores`) and
   its *margin* is the gap between the two highest scores among the variants its constraints
   allow (for a kernel model: between the two highest predicted fractions of the optimum).
3. It explores when its margin is at most the ``quantile`` of the margins of the last
   ``window`` candidate calls: the threshold comes from the model's own scores on the inputs
   it is actually given, not from a constant (during the first ``warmup`` candidates, while
   there are too few margins to rank, every candidate explores). Once a refit exists, a
   candidate on which the latest refit and the starting model choose differently explores too,
   whatever its margin (``disputed`` in :meth:`Refiner.stats`): a model can be sure and wrong
   (a start model far from a target whose sources agree), and the duel between the two choices
   (below) is then timed where they differ by most, not only on near ties, whose single timings
   are mostly noise.

**Audits.** The margin finds the inputs a model is unsure of, not those it is sure of and wrong
about, and a start model far from a target whose sources agree is sure where it is wrong. So a
share ``audit`` (default ``AUDIT``, 10%) of the other candidate calls explores all the same,
under the same budgets (``stats()["audits"]``): their rows show :meth:`Refiner.base_holds` and
the refit the inputs the model is sure of too, and their losses count in
:attr:`Refiner.measured_loss` as any explored call's. On nitro's histogram replayed on the 16-core
Intel host from the four AMD VMs (CV-DFS start model, exact times, ten splits), one split in ten
had explored only uncertain inputs, large ones where the start model was nearly right while it
lost most on small inputs it was sure of, and its start model (67% of the optimum) served to the
end, as it did live on that host (seed 1 of ``nitro bench refine``); with audits that split
reached 96.8 and the mean 91.1 → 94.2, for 0.12 points of the Ginkgo replay (97.36 → 97.24).

The budget is a hard bound: after ``n`` calls at most ``budget·n + 1`` have explored.

**A time budget too.** A share of calls does not bound the time: uncertain inputs are often the
large, slow ones, and an explored call pays for every extra variant it runs. With ``time_budget``
(default 1%), a call explores only while what it is expected to add is at most a quarter
(``SPREAD``) of what the budget has left: ``time_budget`` × the time the calls served so far
took, less the extra time explored calls have spent. The budget then pays for many cheap
explorations rather than a few expensive ones. The served time is estimated from the candidate
calls, which are timed (every ``stride``-th call: ``stride`` × their time; a plain call is not
timed). What a call will add is the time of its choice, from
:class:`nitro.callcost.CallCost` (a regression of the timed calls' log times on their
features), times each extra variant's predicted time over the choice's
(:meth:`nitro.SelectorModel.relative_times`: a kernel or boosted-tree model predicts how much
slower a variant is; for other kinds the geometric mean of the ratios explored calls measured).
Extra variants that do not fit are left out, the lowest ranked first, and nothing explores
before a call has been timed. On nitro's own histogram data, whose slowest variants take 40
times the fastest, a replayed stream of 2,000 calls exploring every variant had let one call
explore before any was timed, and that call added 45% of the stream's optimum. The bound holds
whatever the estimate, since a call that cost more than expected leaves less for the next ones.
Where the explored calls measure the model losing more than ``time_budget``
(:attr:`Refiner.measured_loss`: over the last ``REGRET_WINDOW`` of them, the time their choices
lost to the fastest variant timed beside them, beyond a timing tie, over the choices' time,
times ``quantile``), exploring may spend up to that share instead (:attr:`Refiner.allowed_share`):
it spends at most what the model is seen to waste. A start model far off on a device whose
behaviour no source shows keeps wide margins (its sources agree), and a 1% budget had kept its
few explorations from ever correcting it (nitro's histogram replayed on a 16-core Intel host
from four 2-core AMD VMs: 69% of the optimum before and after 2,000 calls; now 91%).

**What an explored call runs.** The model's choice and the next ``candidates − 1`` allowed
variants by score that no earlier call on the same feature values has timed (an input whose
allowed variants are all timed is not explored again), in a random order (so that no variant
always finds the input in cache), each timed once with ``perf_counter`` (``repeats`` rounds in
alternating order keep each variant's fastest, where single timings are noisy). Constraints
are obeyed as in dispatch: an excluded variant is never run. The call returns what the model's
choice returned, as it would have without refining (variants are functionally equivalent); a
choice that raises is handled as dispatch handles it. Repeated inputs (equal feature values)
share one row, each variant keeping its fastest time.

**Recording and refitting.** Rows (:class:`nitro.measurement.TrainingRow`, input id from a hash
of the feature values, the variants that ran timed, the others missing) go through a bounded
queue to a writer thread: a call never waits for the store; a full queue drops the row from the
store (not from the refit data) and a failing store is counted (:meth:`Refiner.stats`). The refit
runs on everything explored so far in a child process (:mod:`nitro.refit_worker`; a thread of
this process waits for it), so that its Python code never holds this process's interpreter
lock while calls are served (``refit_in="thread"``: in the thread itself). ``CodeVariant.refine`` gives a model from
``tune_from_source`` (with a store) :class:`nitro.transfer.tune.SourcesRefit`, which refits
boosted trees on its sources' rows and the target's; otherwise (:func:`default_refit`) a kernel model is
corrected with :func:`nitro.transfer.fewshot.refine_model`, always from the model refining
started with; other kinds are refitted as an on-device SVM once ``min_complete`` rows time every
variant (explore with ``candidates=None`` for that), else left as they are. No refit runs while
the model refining started with holds on the rows (:meth:`Refiner.base_holds`: within the timing
tie of the fastest timed variant on average); if a refit had replaced it, it is put back. A
refit serves only while refits beat the starting model where the two disagree
(:meth:`Refiner.refits_lose`): once one exists, an explored call runs the other model's choice
first where the latest refit and the starting model choose differently, and the log time ratios
of the two choices are summed; the duel that turns the sum negative, or back to zero or above,
makes a refit due, and below zero the starting model serves again and the next refits are tried
beside it, the first after the sum is no longer negative served.

**No exploring during a background refit.** A refit competes for the cores the variants use:
on a 2-core VM, 4 of 6 histogram variant runs explored while one ran took 7-8 ms instead of
35-85 µs (``nitro bench refine``; the child then ran in a session of its own, where its priority
did not count: :mod:`nitro.refit_worker`), and such rows had taught the refits, inflated the
measured loss and decided duels. The idle class leaves the variants less to lose, not nothing
(the new model's swap runs in the serving process). So no call explores while a refit runs (``refit_skips``), and an explored call
during which one began counts its cost but not its timings: no row, loss or duel
(``explored_during_refits``). A replay, whose refits run synchronously, never meets either. The
new model and its compiled evaluator are built completely before one reference is swapped
(:meth:`nitro.dispatch.Dispatcher.set_model`); a refit that raises is counted and the old model
stays (the starting model, where refits lose). scikit-learn is imported by the refit process (or thread) only.

The decision core (:meth:`Refiner.tick`, :meth:`Refiner.maybe_explore`) is the same for real
calls and for the offline replay of recorded timings (:mod:`nitro.online`): only the way a
variant is run and timed is passed in (:class:`TimedRun` here, recorded times there).
"""
from __future__ import annotations

import atexit
import bisect
import hashlib
import inspect
import itertools
import math
import numbers
import os
import queue
import random
import threading
import time
import warnings
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urlsplit

import numpy as np

from .callcost import CallCost
from .measurement import TimingPolicy, TrainingRow
from .model import SelectorModel

BUDGET = 0.02          # default share of calls that may explore
TIME_BUDGET = 0.01     # default share of the served calls' time that exploring may add
SPREAD = 4             # an explored call may take at most 1/SPREAD of the time budget left
QUANTILE = 0.25        # default share of candidate calls judged uncertain
REFIT_EVERY = 4        # default new target rows between refits
REFIT_GROWTH = 0.125   # ... or this share of the rows so far, if more: O(n) total refit work over n rows
MIN_COMPLETE = 20      # complete rows before a non-kernel model is refitted as an on-device SVM
HOLDS = 1.0 - TimingPolicy.tie   # the start model stays while it reaches this share of the best timed
MAX_ROWS = 20_000      # target rows kept in memory for refits, the most recent (older ones stay in the store)
FAILED_DUEL = math.log(10.0)   # a duel whose one side raised: the other side was 10 times as fast
REFIT_IN = "process"   # background refits run in a child process (nitro.refit_worker), or "thread"
REGRET_WINDOW = 64     # explored calls whose measured loss can raise the time budget
AUDIT = 0.1            # share of the sure candidate calls explored all the same: the loss where the model is sure
# (the defaults were compared on the recorded SpMV data with `nitro evaluate DIR --online`:
# see benchmarks/README.md, "Refining mode")


def feature_id(values: Sequence[float]) -> str:
    """A row id from an input's feature values (what the model sees of it): inputs with
    equal features share a row, whose times are merged."""
    text = ",".join(repr(float(v)) for v in values)
    return "f" + hashlib.sha1(text.encode()).hexdigest()[:16]


class TimedRun:
    """Runs one call's variants: ``run(variant) -> (result, seconds)``, timed once with
    ``perf_counter`` (the refining mode's way of running a variant on a real call)."""

    __slots__ = ("variants", "args", "kwargs")

    def __init__(self, variants: Mapping[str, Callable], args: tuple, kwargs: Mapping[str, Any] | None = None):
        self.variants, self.args, self.kwargs = variants, args, kwargs or {}

    def __call__(self, variant: str) -> tuple[Any, float]:
        fn = self.variants[variant]
        start = time.perf_counter()
        out = fn(*self.args, **self.kwargs)
        return out, time.perf_counter() - start


class WrongResult(Exception):
    """An explored variant's result differed from the served choice's (or the reference's)."""


@dataclass
class Exploration:
    """What one explored call ran: ``results`` and ``times`` (fastest of the repeats) of the
    variants that returned, ``errors`` of those that raised (their time in ``times`` is +inf),
    and ``spent``, the seconds of every run."""
    choice: str
    candidates: list[str]
    results: dict[str, Any] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)
    errors: dict[str, BaseException] = field(default_factory=dict)
    spent: float = 0.0


EXIT_FLUSH = 5.0       # seconds the rows still queued at interpreter exit may take to be written
_with_rows: "weakref.WeakSet[Refiner]" = weakref.WeakSet()   # refiners whose writer opened a store
_running: "weakref.WeakSet[Refiner]" = weakref.WeakSet()
_exit_hook: list = []       # registered once


def _flush_at_exit(refiner: "Refiner") -> None:
    """At normal exit, write the rows still queued (up to ``EXIT_FLUSH`` seconds) instead of
    dropping them with the writer's daemon thread. Registered after the store was opened, so
    that it runs before the embedded store's own exit hook (atexit runs the last one first)."""
    if not _exit_hook:
        atexit.register(_flush_all)
        _exit_hook.append(True)
    _with_rows.add(refiner)


def _flush_all() -> None:
    for refiner in list(_with_rows):
        refiner.stop(timeout=EXIT_FLUSH)


def _forget_after_fork() -> None:
    for refiner in list(_running):
        refiner._forget()


os.register_at_fork(after_in_child=_forget_after_fork)


def default_refit(base: SelectorModel, X: np.ndarray, times: np.ndarray,
                  min_complete: int = MIN_COMPLETE) -> SelectorModel | None:
    """The refit of refining mode: a new model from ``base`` and the target rows ``X`` (n, d)
    with ``times`` (n, len(base.variants); NaN = not run, +inf = failed), or ``None`` to keep
    the current one. Kernel models: :func:`nitro.transfer.fewshot.refine_model`. Other kinds:
    an on-device SVM (:func:`nitro.learn.fit_selector`) on the rows that time every variant,
    once there are ``min_complete`` of them with at least two different fastest variants."""
    if base.kind == "kernel":
        from .transfer.fewshot import refine_model
        return refine_model(base, X, times)
    complete = _complete(times)
    if complete.sum() < min_complete:
        return None
    T = np.where(np.isfinite(times[complete]), times[complete], np.nan)
    if len(set(np.nanargmin(T, axis=1).tolist())) < 2:
        return None
    from .learn import SVMSelector, fit_selector
    est = fit_selector(SVMSelector(), X[complete], T)
    return SelectorModel.from_estimator(est, base.input_features, variants=base.variants, provenance={
        "method": "refined on-device", "base": base.provenance, "target_rows": int(complete.sum())})


def _complete(times: np.ndarray) -> np.ndarray:
    """The rows that time every variant (NaN: not run), with at least one that did not fail."""
    times = np.asarray(times, dtype=float).reshape(len(times), -1)
    return ~np.isnan(times).any(axis=1) & np.isfinite(times).any(axis=1)


def default_refit_keeps(base: SelectorModel, times: np.ndarray, min_complete: int = MIN_COMPLETE) -> bool:
    """Whether :func:`default_refit` keeps ``base`` on rows with these ``times`` without fitting
    (a model other than a kernel one, and fewer than ``min_complete`` rows that time every
    variant): no refit needs to start (a child's start-up keeps calls from exploring)."""
    return base.kind != "kernel" and int(_complete(times).sum()) < min_complete


def duel_gain(refit_t: float, base_t: float) -> float | None:
    """One duel's evidence for the refit, ``log(t_start / t_refit)``: ``None`` unless both
    ran; a side that failed (+inf) loses by ``FAILED_DUEL``, a failure being no faster than a
    slow variant (variants are functionally equivalent, so the other choice was available)."""
    if math.isnan(refit_t) or math.isnan(base_t) or (math.isinf(refit_t) and math.isinf(base_t)):
        return None
    if math.isinf(refit_t) or math.isinf(base_t):
        return FAILED_DUEL if math.isinf(base_t) else -FAILED_DUEL
    return math.log(base_t / refit_t) if refit_t > 0.0 and base_t > 0.0 else None


def _holds(dispatcher, variant: str, values) -> bool:
    """Whether ``variant``'s constraints allow it here; one that cannot be evaluated on these
    values (it raises) keeps the variant from exploring, where plain dispatch never asked it."""
    try:
        return dispatcher._valid(variant, values)
    except Exception:
        return False


STORE_SCHEMES = ("redis", "rediss", "unix")
INTEGER_OPTIONS = ("candidates", "window", "warmup", "refit_every", "queue_size", "repeats")
OPTIONAL_OPTIONS = ("time_budget", "candidates")     # None: no time bound, every variant


def check_options(computation: str, store=None, refit=None, budget: float = BUDGET,
                  time_budget: float | None = TIME_BUDGET, quantile: float = QUANTILE, candidates: int | None = 2,
                  window: int = 256, warmup: int = 16, refit_every: int = REFIT_EVERY, queue_size: int = 1024,
                  repeats: int = 1, audit: float = AUDIT, refit_in: str = REFIT_IN, device_id: str | None = None) -> None:
    """Refining options checked before anything runs (:class:`Refiner`, and the replay before it
    reads a data set): a wrong type or value is an error naming it, not a failure counted later
    by the writer or refit thread (``store=42``, ``refit="trees"``, ``repeats=2.5``)."""
    _check_types(computation, store, refit, budget=budget, time_budget=time_budget, quantile=quantile,
                 candidates=candidates, window=window, warmup=warmup, refit_every=refit_every,
                 queue_size=queue_size, repeats=repeats, audit=audit)
    if not 0.0 < budget <= 1.0:
        raise ValueError(f"the exploration budget is a share of calls in (0, 1], got {budget}")
    if time_budget is not None and not time_budget > 0.0:
        raise ValueError(f"the time budget is a positive share of the served time (None: no bound; on the "
                         f"command line, 0), got {time_budget}")
    if not 0.0 < quantile <= 1.0:
        raise ValueError(f"quantile is a share of candidate calls in (0, 1], got {quantile}")
    if not 0.0 <= audit <= 1.0:
        raise ValueError(f"audit is a share of the sure candidate calls in [0, 1] (0: none), got {audit}")
    if candidates is not None and candidates < 2:
        raise ValueError(f"an explored call compares at least 2 variants (None: all; on the command line, 0), "
                         f"got candidates={candidates}")
    if refit_every < 1 or window < 1 or warmup < 0 or queue_size < 1 or repeats < 1:
        raise ValueError("refit_every, window, queue_size and repeats must be positive, warmup not negative")
    if refit_in not in ("process", "thread"):
        raise ValueError(f"refit_in is 'process' or 'thread', got {refit_in!r}")
    if device_id is not None and not (isinstance(device_id, str) and device_id):
        raise TypeError(f"{computation}: device_id is the non-empty name rows are recorded under, got {device_id!r}")


def _check_types(computation: str, store, refit, **options) -> None:
    """The types of :func:`check_options`'s arguments."""
    wrong = [f"{name}={value!r}" for name, value in options.items()
             if not (value is None and name in OPTIONAL_OPTIONS) and (isinstance(value, bool) or not isinstance(
                 value, numbers.Integral if name in INTEGER_OPTIONS else numbers.Real))]
    if wrong:
        raise TypeError(f"{computation}: refining options must be numbers ({', '.join(INTEGER_OPTIONS)}: whole "
                        f"numbers), got {', '.join(wrong)}")
    if refit is not None and not callable(refit):
        raise TypeError(f"{computation}: refit is a callable refit(base, X, times) -> model or None "
                        f"(e.g. nitro.refine.default_refit), got {refit!r}")
    if isinstance(store, str):
        if urlsplit(store).scheme not in STORE_SCHEMES:
            raise ValueError(f"{computation}: store {store!r} is not a Redis URL ({', '.join(s + '://' for s in STORE_SCHEMES)})")
    elif store is not None and not callable(getattr(store, "merge_rows", None)):
        raise TypeError(f"{computation}: store is a nitro Store or a Redis URL, got {store!r}")


CHECKED_OPTIONS = tuple(inspect.signature(check_options).parameters)[2:]   # the Refiner options it checks


def warn_if_far_and_sure(name: str, model: SelectorModel | None, time_budget: float | None) -> None:
    """Warn where refining starts from a zero-shot model whose estimate is low and whose device
    lies outside its sources', with no more than the default time budget: such a model can be
    sure where it is wrong, and the budget pays for few explored calls in a short stream (nitro's
    histogram on a 16-core Intel host from 2-core AMD sources stayed at 79-82% live in one run of
    four; few-shot from 5 inputs gave 90.9; replayed, ``budget=0.05, time_budget=0.03`` took its
    2,000-call stream from 1.14 to 1.08 of the optimum, but the Ginkgo replay's Radeon VII, also
    outside its sources and with a good start, from 1.042 to 1.056: hence advice, not a default)."""
    provenance = getattr(model, "provenance", None) or {}
    estimate = provenance.get("confidence") or {}
    if (estimate.get("level") == "low" and estimate.get("outside_sources") and "few_shot" not in provenance
            and time_budget is not None and time_budget <= TIME_BUDGET):
        warnings.warn(f"{name}: refining a zero-shot model whose estimate is low and whose target lies outside "
                      f"its sources ({'; '.join(estimate.get('low_because', []))}): it can be sure where it is "
                      f"wrong, and a time budget of {time_budget:g} pays for few explored calls in a short stream. "
                      "Time a few inputs on this device first (tune_from_source(..., target_budget=6) or more) "
                      "or refine with larger budgets (refine(budget=0.05, time_budget=0.03))", stacklevel=3)


class Refiner:
    """Refining mode of one dispatcher (see the module documentation).

    ``dispatcher``: the code variant's :class:`nitro.dispatch.Dispatcher`, holding the model to
    refine. ``store``: a :class:`nitro.Store` or URL to record rows in (``None``: kept in
    memory only), under ``computation`` and ``device_id``. ``budget``: the largest share of
    calls that explore. ``candidates``: variants an explored call runs (``None``: every allowed
    one). ``quantile``, ``window``, ``warmup``: the uncertainty rule; ``audit``: the share of the
    other candidate calls, sure by their margin, explored all the same. ``refit_every``: new rows
    between refits (at least; an eighth of the rows so far once that is more); ``refit(base,
    X, times)``: the refit (:func:`default_refit`). ``repeats``: rounds of the candidates per
    explored call (alternating order, fastest kept), for noisy machines where one timing of a
    millisecond call can be off by a factor. ``time_budget``: the largest share of the served
    calls' time that explored calls may add, or the loss they measure where higher
    (:attr:`allowed_share`; ``None``: no bound but ``budget``).
    ``background=False`` refits synchronously in the calling thread (deterministic replay).
    ``refit_in``: where background refits run, ``"process"`` (a child interpreter,
    :class:`nitro.refit_worker.RefitProcess`: calls never wait for the refit's interpreter lock)
    or ``"thread"``; a refit that cannot be pickled runs in a thread (``stats()["refit_in"]``
    says where, ``refit_in_fallback`` why).
    """

    def __init__(self, dispatcher, computation: str, *, store=None, device_id: str | None = None,
                 budget: float = BUDGET, time_budget: float | None = TIME_BUDGET,
                 candidates: int | None = 2, quantile: float = QUANTILE,
                 window: int = 256, warmup: int = 16, refit_every: int = REFIT_EVERY,
                 refit: Callable | None = None, queue_size: int = 1024, seed: int = 0,
                 repeats: int = 1, background: bool = True, on_stop: Callable | None = None,
                 refit_in: str = REFIT_IN, audit: float = AUDIT, check: Callable | None = None,
                 reference: Callable | None = None):
        check_options(computation, store=store, refit=refit, budget=budget, time_budget=time_budget,
                      quantile=quantile, candidates=candidates, window=window, warmup=warmup,
                      refit_every=refit_every, queue_size=queue_size, repeats=repeats, audit=audit,
                      refit_in=refit_in, device_id=device_id)
        model = dispatcher.model
        if model is None:
            raise ValueError(f"{computation}: refining mode refines a model: tune, tune_from_source or "
                             "load one first")
        if store is not None and not device_id:
            raise ValueError(f"{computation}: recording refined rows needs the device id they belong to")
        self.computation, self.device_id = computation, device_id
        self.check, self.reference = check, reference
        self.budget, self.candidates, self.quantile = float(budget), candidates, float(quantile)
        self.audit = float(audit)
        self.time_budget = None if time_budget is None else float(time_budget)
        self.warmup, self.refit_every, self.repeats = int(warmup), int(refit_every), int(repeats)
        self.stride = max(1, math.floor(self.quantile / self.budget))
        self.base = model
        self._dispatcher = dispatcher
        self._refit = refit or default_refit
        if refit is None and model.kind != "kernel" and (candidates or len(model.variants)) < len(model.variants):
            warnings.warn(f"{computation}: this {model.kind} model is refitted from rows that time every one of its "
                          f"{len(model.variants)} variants, and an explored call times {candidates}: only inputs "
                          f"explored again complete a row, so refits come late or never; pass candidates=None (all) "
                          f"or {len(model.variants)}", RuntimeWarning, stacklevel=3)
        self.refit_in, self._refit_in_fallback = (refit_in if background else "thread"), None
        if self.refit_in == "process":
            self._refit = self._in_process(self._refit)
        self._on_stop = on_stop
        self._calls = itertools.count(1)
        self._lock = threading.Lock()          # the decision: budget, margins, random order
        self._rows_lock = threading.Lock()     # the refit data
        self._margins: deque[float] = deque(maxlen=int(window))    # in arrival order
        self._sorted_margins: list[float] = []                       # the same, sorted
        self._rng = random.Random(seed)
        self._rows: dict[tuple, tuple[list[float], dict[str, float], dict[str, str]]] = {}   # by feature values
        self._since_refit = 0
        self._refit_model: SelectorModel | None = None   # the latest refit, serving or tried beside the start model
        self.duel_log_gain, self.duel_inputs = 0.0, 0   # Σ log(t_start's choice / t_refit's) where they differ
        self._refit_lock = threading.Lock()
        self._swap_lock = threading.Lock()     # stopping against a refit's swap
        self._stopped = False
        self._stop_deadline = math.inf
        self._reserved = 0.0                   # estimated extra time of calls exploring now
        self._local = threading.local()
        self.calls = 0
        self._cost = CallCost(len(dispatcher.features), model.input_units())
        self._sampled_seconds = 0.0    # the candidate calls' time (their choice's, when explored)
        self._ratio_sum, self._ratio_n = 0.0, 0   # explored alternatives' log time over their choice's
        self._losses: deque[tuple[float, float]] = deque(maxlen=REGRET_WINDOW)   # (choice's time, time lost)
        self._counts = dict(candidate_calls=0, explored=0, budget_skips=0, time_skips=0, rows_recorded=0,
                            rows_written=0, rows_dropped=0, store_errors=0, refits=0, refits_kept=0, base_held=0,
                            refits_lost=0, refit_errors=0, refit_skips=0, explored_during_refits=0, disputed=0,
                            audits=0, wrong_results=0)
        self.explore_seconds = 0.0     # all variant runs of explored calls
        self.extra_seconds = 0.0       # the part the model's choice alone would not have spent
        self.last_store_error: str | None = None
        self.last_refit_error: str | None = None
        self.threshold = math.inf
        self.background = bool(background)
        self._store = store
        self._queue: queue.Queue | None = None
        self._threads: list[threading.Thread] = []
        self._refit_wanted = threading.Event()
        self._refit_epoch = 0                  # odd while a background refit runs: changes at its start and end
        if store is not None:
            self._queue = queue.Queue(maxsize=int(queue_size))
            self._threads.append(threading.Thread(target=self._write_loop, name=f"nitro-refine-store-{computation}",
                                                  daemon=True))
        if self.background:
            self._threads.append(threading.Thread(target=self._refit_loop, name=f"nitro-refine-fit-{computation}",
                                                  daemon=True))
        for t in self._threads:
            t.start()
        _running.add(self)

    # -- the decision (shared by real calls and the replay) ------------------------------------
    def tick(self) -> bool:
        """Count one call; whether it is a candidate for exploring (an integer test only)."""
        n = next(self._calls)
        self.calls = n
        return n % self.stride == 0 and not self._stopped

    def plan(self, values: Sequence[float], choice: str, chosen_by: SelectorModel | None = None) -> list[str] | None:
        """The variants a candidate call with features ``values`` and dispatch choice ``choice``
        should run, or ``None`` when it should run only its choice (sure enough, or no budget).
        ``chosen_by``: the model that made ``choice``, where the caller knows it (its scores rank
        the alternatives, and its choice is not predicted again); else the one installed now."""
        with self._lock:
            if self._counts["explored"] + 1 > self.budget * self.calls + 1:
                self._counts["budget_skips"] += 1
                return None
            if self._refit_epoch % 2:              # a background refit competes for the cores now:
                self._counts["refit_skips"] += 1   # its timings would measure the refit, not the variants
                return None
        d = self._dispatcher
        model = d.model if chosen_by is None else chosen_by
        if model is None:                      # the model was taken away (cv.model = None): a plain call
            return None
        scores = model.compiled().scores_one(values)          # C++ for kernel models
        if scores is None:
            scores = model.scores([values])[0].tolist()
        allowed = ([i for i, v in enumerate(model.variants) if v == choice or _holds(d, v, values)]
                   if d.constraints else range(len(model.variants)))
        if len(allowed) < 2:
            return None
        ranked = sorted(allowed, key=lambda i: -scores[i])
        margin = float(scores[ranked[0]] - scores[ranked[1]])
        if math.isnan(margin):                 # e.g. two infinite scores: no rank to learn from
            return None
        limit = len(ranked) if self.candidates is None else self.candidates - 1
        key = tuple(values)
        with self._rows_lock:                  # what earlier calls on these features already timed
            timed = self._rows.get(key, (None, {}, None))[1]
        others = [model.variants[i] for i in ranked if model.variants[i] != choice and model.variants[i] not in timed]
        if not others:
            return None
        with self._lock:
            self._counts["candidate_calls"] += 1
            ordered = self._sorted_margins
            uncertain = True                       # too few margins to rank: explore
            if ordered and len(ordered) >= self.warmup:
                self.threshold = ordered[min(len(ordered) - 1, int(self.quantile * len(ordered)))]
                uncertain = margin <= self.threshold
            if len(self._margins) == self._margins.maxlen:
                del ordered[bisect.bisect_left(ordered, self._margins.popleft())]
            self._margins.append(margin)
            bisect.insort(ordered, margin)
        duel, rival = self._duel_pair(values, choice, timed, model, chosen_by)
        if duel is not None:                   # the other model's choice first: refit against start
            others = [rival] + [v for v in others if v != rival]
        others = others[:limit]
        with self._lock:
            audit = not uncertain and duel is None
            if audit and self._rng.random() >= self.audit:
                return None                    # sure, and not drawn for an audit
            if not uncertain and not audit:    # sure by its margin, but the latest refit and the start
                self._counts["disputed"] += 1  # model disagree: a duel, where it tells most
            if self._counts["explored"] + 1 > self.budget * self.calls + 1:
                self._counts["budget_skips"] += 1
                return None
            expected = 0.0
            if self.time_budget is not None:   # calls exploring now count at their estimate
                left = (self.allowed_share * self.served_seconds - self.extra_seconds - self._reserved) / SPREAD
                others, expected = self._affordable(model, others, scores, values, choice, left)
                if not others:
                    self._counts["time_skips"] += 1
                    return None
                self._reserved += expected
            self._local.reserved = expected
            self._local.duel = (key, duel) if duel is not None and set(duel) <= {choice, *others} else None
            self._local.epoch = self._refit_epoch
            self._counts["explored"] += 1
            self._counts["audits"] += audit
            run = [choice] + others
            self._rng.shuffle(run)
        return run

    def _duel_pair(self, values, choice: str, timed, model: SelectorModel,
                   chosen_by: SelectorModel | None = None) -> tuple[tuple[str, str] | None, str | None]:
        """``((the latest refit's choice, the start model's), the one that is not ``choice``)``
        on ``values`` when the two differ and ``choice``, the serving ``model``'s, is one of them
        (a call chosen by an older refit is no evidence), and the other was not timed here before
        and is one of ``model``'s variants; else ``(None, None)``. Attributed by the two models'
        own choices, whichever serves (``chosen_by``: the model known to have chosen ``choice``)."""
        refit = self._refit_model
        if refit is None:
            return None, None
        # the model that chose, where the caller says: its choice needs no second prediction
        pair = (choice if chosen_by is refit else self._choice_of(refit, values),
                choice if chosen_by is self.base else self._choice_of(self.base, values))
        if None in pair or pair[0] == pair[1] or choice not in pair:
            return None, None
        rival = pair[1] if pair[0] == choice else pair[0]
        return (None, None) if rival in timed or rival not in model.variants else (pair, rival)

    def _choice_of(self, model: SelectorModel, values) -> str | None:
        """What ``model`` would run on ``values`` under the constraints, or ``None`` where that
        cannot be told (a constraint raises, or excludes the default too): plain dispatch never
        asked, so a call must not fail for it."""
        try:
            return self._dispatcher.choose(list(values), model)
        except Exception:
            return None

    def _affordable(self, model: SelectorModel, others: list[str], scores, values, choice: str,
                    left: float) -> tuple[list[str], float]:
        """The leading ``others`` whose runs fit in ``left`` seconds, and their expected extra
        time: the cost model's time of the choice (nothing timed yet: nothing fits) times each
        variant's predicted time over the choice's (:meth:`nitro.SelectorModel.relative_times`;
        for a model whose scores say nothing about time, the geometric mean of the ratios explored
        calls measured, 1 before any), ``repeats`` times, plus the choice's own repeats."""
        if self._cost.n == 0:
            return [], 0.0
        own = self._cost.predict(values)
        ratios = model.relative_times(scores, model.variants.index(choice)) if choice in model.variants else None
        index = {v: i for i, v in enumerate(model.variants)}
        fallback = math.exp(self._ratio_sum / self._ratio_n) if self._ratio_n else 1.0
        expected = own * (self.repeats - 1)
        kept = []
        for v in others:
            ratio = fallback if ratios is None else ratios[index[v]]
            cost = own * ratio * self.repeats
            if not expected + cost <= left:
                break
            expected += cost
            kept.append(v)
        return kept, expected

    @property
    def measured_loss(self) -> float:
        """(Read with the decision lock held.) The share of the served time the current model is
        measured to lose: on the last
        ``REGRET_WINDOW`` explored calls, the time their choice lost to the fastest variant timed
        beside it (beyond a timing tie) over the choice's time, times ``quantile`` (explored calls
        are the uncertain share of the candidates; the sure ones are counted as losing nothing)."""
        own = sum(o for o, _ in self._losses)
        return self.quantile * sum(lost for _, lost in self._losses) / own if own > 0.0 else 0.0

    @property
    def allowed_share(self) -> float:
        """The share of the served time exploring may add: ``time_budget``, or
        :attr:`measured_loss` where higher (see the module documentation)."""
        return max(self.time_budget, self.measured_loss)

    @property
    def served_seconds(self) -> float:
        """The time of the calls served so far, as the plain calls would have taken it:
        ``stride`` × the candidate calls' (the time budget's reference)."""
        return self.stride * self._sampled_seconds

    def observe(self, values: Sequence[float], seconds: float) -> None:
        """A candidate call that did not explore ran its choice in ``seconds``: the time
        budget's account and the cost model learn it (the caller times candidate calls only)."""
        if seconds >= 0.0 and math.isfinite(seconds):
            with self._lock:
                self._sampled_seconds += seconds
                if self.time_budget is not None:   # the cost model serves the time budget only
                    self._cost.add(values, seconds)

    def explore(self, values: Sequence[float], choice: str, run_order: list[str],
                run: Callable[[str], tuple[Any, float]], reference: Callable[[], Any] | None = None) -> Exploration:
        """Run ``run_order`` with ``run(variant) -> (result, seconds)``, record the row, and
        refit when ``refit_every`` rows, or ``REFIT_GROWTH`` of all rows if more, have come in
        since the last refit."""
        ex = Exploration(choice, list(run_order))
        for r in range(self.repeats):             # rounds in alternating order (ABBA): neither
            for v in (run_order if r % 2 == 0 else run_order[::-1]):   # side always runs first
                if v in ex.errors:
                    continue
                try:
                    out, seconds = run(v)
                except (Exception, SystemExit) as exc:  # a failing variant is a measurement, as in training
                    # (a sys.exit in a variant the plain call would not have run must not end the caller)
                    ex.errors[v] = exc
                    ex.times[v] = math.inf
                    ex.results.pop(v, None)
                    continue
                ex.spent += seconds
                ex.results.setdefault(v, out)
                ex.times[v] = min(seconds, ex.times.get(v, math.inf))
        if self.check is not None:
            self._check_results(ex, reference)
        self._record(values, ex)
        return ex

    def _check_results(self, ex: Exploration, reference: Callable[[], Any] | None) -> None:
        """Fail the variants whose result differs, by ``check``, from the served choice's (or,
        where a ``reference`` is given and they differ, from the reference's): a fast wrong
        variant must not be learned. Failed, its time is +inf, as in training."""
        if ex.choice not in ex.results or len(ex.results) < 2:
            return
        served = ex.results[ex.choice]
        differ = [v for v in ex.results if v != ex.choice and not self._same(ex.results[v], served)]
        if not differ:
            return
        against, what = served, f"the served choice {ex.choice!r}"
        if reference is not None:        # which one is wrong: the reference says (once, on a mismatch)
            against, what = reference(), "the reference"
            differ = [v for v in ex.results if not self._same(ex.results[v], against)]
        for v in differ:
            ex.errors[v] = WrongResult(f"its result differs from {what}'s")
            ex.times[v] = math.inf
        self._counts["wrong_results"] += len(differ)

    def _same(self, result, expected) -> bool:
        try:
            return bool(self.check(result, expected))
        except Exception:             # not comparable (None against an array): not the same
            return False

    def timed(self, variants: Mapping[str, Callable], args: tuple, kwargs: Mapping[str, Any] | None = None) -> TimedRun:
        """The real way of running a call's variants (:class:`TimedRun`)."""
        return TimedRun(variants, args, kwargs)

    def maybe_explore(self, values: Sequence[float], choice: str, run: Callable[[str], tuple[Any, float]],
                      chosen_by: SelectorModel | None = None,
                      reference: Callable[[], Any] | None = None) -> Exploration | None:
        """The refining step of a candidate call (after :meth:`tick`): ``None`` when the call
        should just run ``choice`` (made by ``chosen_by``, where known: :meth:`plan`), else what
        exploring it ran."""
        order = self.plan(values, choice, chosen_by)
        return None if order is None else self.explore(values, choice, order, run, reference)

    # -- rows -------------------------------------------------------------------------------------
    def _record(self, values, ex: Exploration):
        finite = [t for t in ex.times.values() if math.isfinite(t)]
        reasons = {v: f"{type(e).__name__}: {e}"[:500] for v, e in ex.errors.items()}
        own = ex.times.get(ex.choice, math.inf)
        planned, self._local.duel = getattr(self._local, "duel", None), None
        duel = planned[1] if planned is not None and planned[0] == tuple(values) else None   # this input's plan
        verdict_flips = False      # the duel that turns the sum negative, or back: decide at once
        with self._lock:              # the time budget's account: served time, spent time, cost model
            self._reserved -= getattr(self._local, "reserved", 0.0)
            self._local.reserved = 0.0
            self.explore_seconds += ex.spent       # with the reservation's release: plan() sees one or the other
            self.extra_seconds += ex.spent - (own if math.isfinite(own) else 0.0)
            epoch, self._local.epoch = getattr(self._local, "epoch", None), None   # None: not planned
            if epoch is not None and (epoch % 2 or epoch != self._refit_epoch):
                self._counts["explored_during_refits"] += 1   # a refit began meanwhile and competed for the
                return                                       # cores: its cost counts, its timings teach nothing
            if duel is not None:      # the refit's choice against the start model's, on one input
                gain = duel_gain(*(ex.times.get(v, math.nan) for v in duel))
                if gain is not None:
                    verdict_flips = (self.duel_log_gain >= 0.0) != (self.duel_log_gain + gain >= 0.0)
                    self.duel_log_gain += gain
                    self.duel_inputs += 1
            if math.isfinite(own):
                self._sampled_seconds += own
            if math.isfinite(own) and own > 0.0 and len(finite) > 1:   # what the choice lost here,
                best = min(finite) * (1.0 + TimingPolicy.tie)             # beyond a timing tie
                self._losses.append((own, max(0.0, own - best)))
            if self.time_budget is not None and math.isfinite(own) and own > 0.0:
                self._cost.add(values, own)      # what a call costs: its choice's time
                for v, t in ex.times.items():    # what an alternative costs against it (in logs:
                    if v != ex.choice and math.isfinite(t) and t > 0.0:   # one outlier must not stall exploring)
                        self._ratio_sum += math.log(t / own)
                        self._ratio_n += 1
        with self._rows_lock:
            if not finite:
                return
            key = tuple(values)
            feats, times, failed = self._rows.get(key, (list(map(float, values)), {}, {}))
            times = {**times, **{v: min(t, times.get(v, math.inf)) for v, t in ex.times.items()}}
            failed = {v: why for v, why in {**failed, **reasons}.items() if not math.isfinite(times[v])}
            self._rows[key] = (feats, times, failed)
            if len(self._rows) > MAX_ROWS:     # the oldest input's row leaves the refit data
                del self._rows[next(iter(self._rows))]
            self._since_refit += 1
            due = verdict_flips or self._since_refit >= max(self.refit_every, REFIT_GROWTH * len(self._rows))
            if due:
                self._since_refit = 0
            self._counts["rows_recorded"] += 1
        if self._queue is not None:
            variants = self._dispatcher.variants
            row = TrainingRow(feature_id(feats), dict(zip(self._dispatcher.features, feats)),
                              {v: (None if not math.isfinite(t) else t) for v, t in times.items() if v in variants},
                              failed)
            try:
                self._queue.put_nowait(row)
            except queue.Full:
                self._counts["rows_dropped"] += 1
        if due:
            if self.background:
                self._refit_wanted.set()
            else:
                self.refit_now()

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The target rows so far: features (n, d) and times (n, len(base.variants)), NaN
        where a variant did not run and +inf where it failed."""
        variants = self.base.variants
        with self._rows_lock:
            items = list(self._rows.values())
        X = np.array([f for f, _, _ in items], dtype=np.float64).reshape(len(items), len(self.base.input_features))
        T = np.array([[t.get(v, math.nan) for v in variants] for _, t, _ in items], dtype=np.float64)
        return X, T.reshape(len(items), len(variants))

    # -- refits -----------------------------------------------------------------------------------
    def base_holds(self, X: np.ndarray, T: np.ndarray) -> bool:
        """Whether the model refining began with did as well as the rows can tell: on the rows
        that timed its choice, a mean fraction of the fastest timed variant of at least ``HOLDS``
        (1 − the timing tie of :class:`nitro.measurement.TimingPolicy`). Then no refit replaces it:
        a refit from a few noisy rows can only make a model that is already right worse."""
        choice = self.base.predict_index(X)
        own = T[np.arange(len(X)), choice]
        ran = ~np.isnan(own) & np.isfinite(T).any(axis=1)
        if not ran.any():
            return False
        best = np.where(np.isnan(T[ran]), np.inf, T[ran]).min(axis=1)
        return float(np.mean(np.where(np.isfinite(own[ran]), best / own[ran], 0.0))) >= HOLDS

    def refits_lose(self) -> bool:
        """Whether the refits' choices, timed beside the start model's on the explored inputs
        where the two differed (each after the refit that chose it was made; :func:`duel_gain`),
        took longer in all: ``Σ log(t_refit / t_start) > 0``. A refit from a few noisy rows can
        make a model that was right worse; the start model then serves again and each later
        refit is tried beside it, served once the sum is no longer negative. Decided at each
        refit, whatever it returns; the duel that turns the sum negative, or back, makes a refit
        due (putting the start model back at each lost duel without one made the choices flip
        between the two models and cost the SpMV replay 0.3 points; waiting for the next refit's
        rows to serve a refit that had won back kept nitro's histogram replayed on the Intel
        host at its start model's 69% on a 2,000-call stream)."""
        with self._lock:
            return self.duel_inputs > 0 and self.duel_log_gain < 0.0

    def _serve_base_if_losing(self) -> bool:
        """With ``_refit_lock`` held: put the start model back where a refit serves and refits
        lose (:meth:`refits_lose`); whether it did."""
        if self._dispatcher.model is not self.base and self.refits_lose() and self._swap(self.base):
            self._counts["refits_lost"] += 1
            return True
        return False

    def refit_now(self) -> bool:
        """Refit from every row so far and swap the new model in; ``False`` when the model
        refining began with holds on the rows (:meth:`base_holds`: it is put back if a refit
        had replaced it), the refit kept the model (too few rows for its kind), refits lose to
        the starting model (:meth:`refits_lose`: the new one is tried beside it) or it failed
        (counted, the old model stays)."""
        with self._refit_lock:
            X, T = self.rows()
            if len(X) and self.base_holds(X, T):
                if self._dispatcher.model is not self.base:
                    self._swap(self.base)
                self._counts["base_held"] += 1
                return False
            try:
                if self.refit is default_refit and default_refit_keeps(self.base, T):
                    model = None               # known without starting a refit
                else:
                    model = self._refit(self.base, X, T) if len(X) else None
                if model is None:
                    self._counts["refits_kept"] += 1
                    return False
                model.compiled()                   # fully built before anyone can see it
                self._refit_model = model          # the duels now judge it, serving or beside
                if self.refits_lose():             # tried beside the start model, which serves:
                    if self._dispatcher.model is self.base:   # (a serving refit is swapped out below)
                        self._counts["refits_lost"] += 1
                    return False
                if not self._swap(model):
                    return False
            except Exception as exc:  # a refit must never break the calls it serves
                self._counts["refit_errors"] += 1
                self.last_refit_error = f"{type(exc).__name__}: {exc}"
                return False
            finally:                               # a refit that kept the model or failed decides too
                self._serve_base_if_losing()
            self._counts["refits"] += 1
            return True

    @property
    def refit(self) -> Callable:
        """The refit ``refit(base, X, times)`` (the callable a child process runs, when refits
        run in one)."""
        return self._refit.refit if self.refit_in == "process" else self._refit

    def _in_process(self, refit):
        """``refit`` run by a child process, or ``refit`` itself when it cannot be pickled."""
        from .refit_worker import RefitProcess, unpicklable
        why = unpicklable(refit)
        if why is not None:               # a lambda, a closure, a store client: refit in a thread
            self.refit_in, self._refit_in_fallback = "thread", why
            return refit
        return RefitProcess(refit)

    def _swap(self, model: SelectorModel) -> bool:
        """Install ``model`` (one reference swapped) unless refining has stopped meanwhile: a
        refit that outlives :meth:`stop` must not replace the model dispatch has gone back to."""
        with self._swap_lock:
            if self._stopped:
                return False
            self._dispatcher.set_model(model)
            return True

    def _refit_loop(self):
        while True:
            self._refit_wanted.wait()
            if self._stopped:
                return
            self._refit_epoch += 1
            self._refit_wanted.clear()
            try:
                self.refit_now()
            finally:
                self._refit_epoch += 1

    # -- the store --------------------------------------------------------------------------------
    def _open_store(self):
        if isinstance(self._store, str):
            from .store import Store
            self._store = Store(self._store)
        self._store.declare(self.computation, self._dispatcher.variants, self._dispatcher.features)
        return self._store

    def _put(self, store, row: TrainingRow) -> None:
        """Write one row over the stored one (:meth:`TrainingRow.over`: the times another process,
        or this one before a restart, stored for other variants of the input are kept); a store
        that lost the computation (restarted without its data, or a computation removed) has it
        declared again, once, and the row written then."""
        from .store import StoreError
        try:
            store.merge_rows(self.computation, self.device_id, [row], TrainingRow.over)
        except StoreError as exc:
            if "unknown computation" not in str(exc):
                raise
            store.declare(self.computation, self._dispatcher.variants, self._dispatcher.features)
            store.merge_rows(self.computation, self.device_id, [row], TrainingRow.over)

    def _write_loop(self):
        store = None
        while True:
            try:
                row = self._queue.get(timeout=0.05)
            except queue.Empty:
                if self._stopped:
                    return
                continue
            try:
                if self._stopped and time.monotonic() > self._stop_deadline:
                    self._counts["rows_dropped"] += 1     # stop()'s time to write them is over
                    continue
                if store is None:
                    store = self._open_store()
                    _flush_at_exit(self)
                self._put(store, row)
                self._counts["rows_written"] += 1
            except Exception as exc:  # a slow or failing store never reaches the calls
                self._counts["store_errors"] += 1
                self.last_store_error = f"{type(exc).__name__}: {exc}"[:500]
            finally:
                self._queue.task_done()

    # -- control ----------------------------------------------------------------------------------
    def wait(self, timeout: float = 30.0) -> bool:
        """Wait until queued rows are written and a requested refit has run; ``False`` on
        timeout (for tests and benchmarks; calls never need it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending = self._queue.unfinished_tasks if self._queue is not None else 0
            if not pending and not self._refit_wanted.is_set() and not self._refit_epoch % 2:
                return True
            time.sleep(0.005)
        return False

    def stop(self, timeout: float = 5.0, wait: bool = True) -> dict:
        """Leave refining mode: calls dispatch plainly again at once, a refit still running is
        not swapped in, rows queued are still written for up to ``timeout`` seconds (then
        dropped and counted) and the threads end. ``wait``: wait for the writing (not for a
        refit). Returns :meth:`stats`."""
        if not self._stopped:
            with self._swap_lock:
                self._stop_deadline = time.monotonic() + timeout
                self._stopped = True
            on_stop, self._on_stop = self._on_stop, None
            if on_stop is not None:
                on_stop(self)
            self._refit_wanted.set()
            close = getattr(self._refit, "close", None)
            if close is not None:               # the refit process: this refiner's refits are not waited for
                close()
            writers = [t for t in self._threads if t.name.startswith("nitro-refine-store")]
            for t in writers if wait else ():
                t.join(max(0.0, self._stop_deadline - time.monotonic()) + 0.1)
            if wait and self._queue is not None:    # the time is over: what is still queued is dropped
                self._drain()
        return self.stats()

    def _drain(self) -> None:
        """Count the rows left in the queue as dropped (the writer may be stuck on a slow store)."""
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return
            self._counts["rows_dropped"] += 1
            self._queue.task_done()

    def _forget(self) -> None:
        """In a forked child: no writer or refit thread came along, so the child dispatches
        plainly with the model it has (its own exploring would reach no store, no refit)."""
        self._stopped, self._queue = True, None
        on_stop, self._on_stop = self._on_stop, None
        if on_stop is not None:
            on_stop(self)

    @property
    def active(self) -> bool:
        return not self._stopped

    def stats(self) -> dict:
        """Counts so far: calls, candidate calls scored, explored calls and their share, rows
        recorded / written / dropped, store errors, refits (swapped, kept, lost to the starting
        model, failed) and the duels' evidence (``duel_inputs``, ``duel_log_gain``; ``disputed``:
        candidate calls sure by their margin on which the two models disagreed, before the budgets), seconds
        spent by explored calls and the extra part of it, the estimated time of the calls served
        (``served_seconds``) and the time budget with the calls it kept from exploring
        (``time_skips``), the current margin threshold, the
        refit's name and, for one that fell back to another, why (``refit_fallback``), and where
        refits run (``refit_in``; ``refit_in_fallback``: why not in a process; ``refit_starved``:
        when and why the child process left the idle scheduling class)."""
        c = dict(self._counts)
        with self._lock:                       # the losses' window changes under it while calls explore
            loss = self.measured_loss
            allowed = None if self.time_budget is None else self.allowed_share
        with self._rows_lock:
            inputs = len(self._rows)
        in_thread = getattr(self._refit, "fallback", None) if self.refit_in == "process" else None
        return {"calls": self.calls, **c, "explored_fraction": c["explored"] / self.calls if self.calls else 0.0,
                "budget": self.budget, "stride": self.stride, "threshold": self.threshold,
                "target_inputs": inputs, "queued": self._queue.qsize() if self._queue is not None else 0,
                "duel_inputs": self.duel_inputs, "duel_log_gain": self.duel_log_gain,
                "explore_seconds": self.explore_seconds, "extra_seconds": self.extra_seconds,
                "served_seconds": self.served_seconds, "time_budget": self.time_budget,
                "measured_loss": loss, "allowed_share": allowed,
                "last_store_error": self.last_store_error, "last_refit_error": self.last_refit_error,
                "refit": getattr(self._refit, "__name__", type(self._refit).__name__),
                "refit_fallback": getattr(self._refit, "error", None),
                "refit_in": "thread" if in_thread else self.refit_in,
                "refit_in_fallback": in_thread or self._refit_in_fallback,
                "refit_starved": getattr(self._refit, "starved", None), "active": not self._stopped}


OPTIONS = tuple(p for p in inspect.signature(Refiner.__init__).parameters
                if p not in ("self", "dispatcher", "computation", "store", "device_id", "on_stop"))   # refine(**options)
