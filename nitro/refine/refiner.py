"""The refiner: refining mode of one dispatcher, its state, threads and control (see
:mod:`nitro.refine`)."""
from __future__ import annotations

import inspect
import itertools
import math
import os
import queue
import random
import threading
import time
import warnings
import weakref
from collections import deque
from typing import Callable

from ..callcost import CallCost
from ..model import SelectorModel
from .explore import REGRET_WINDOW, ExploreMixin
from .options import AUDIT, BUDGET, QUANTILE, REFIT_EVERY, REFIT_IN, TIME_BUDGET, check_options, time_bound
from .refit import RefitMixin, default_refit
from .writer import WriterMixin

_running: "weakref.WeakSet[Refiner]" = weakref.WeakSet()


def _forget_after_fork() -> None:
    for refiner in list(_running):
        refiner._forget()


os.register_at_fork(after_in_child=_forget_after_fork)


class Refiner(ExploreMixin, RefitMixin, WriterMixin):
    """Refining mode of one dispatcher (see :mod:`nitro.refine`).

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
    (:attr:`allowed_share`; ``None`` or ``float("inf")``: no bound but ``budget``; NaN and
    shares of 0 or less are refused).
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
                 refit_in: str = REFIT_IN, audit: float = AUDIT, check: Callable | None = None):
        check_options(computation, store=store, refit=refit, budget=budget, time_budget=time_budget,
                      quantile=quantile, candidates=candidates, window=window, warmup=warmup,
                      refit_every=refit_every, queue_size=queue_size, repeats=repeats, audit=audit,
                      refit_in=refit_in, device_id=device_id, seed=seed, background=background)
        model = dispatcher.model
        if model is None:
            raise ValueError(f"{computation}: refining mode refines a model: tune, tune_from_source or "
                             "load one first")
        if store is not None and not device_id:
            raise ValueError(f"{computation}: recording refined rows needs the device id they belong to")
        self.computation, self.device_id = computation, device_id
        self.check = check
        self.budget, self.candidates, self.quantile = float(budget), candidates, float(quantile)
        self.audit = float(audit)
        self.time_budget = time_bound(time_budget)
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
        when and why the child process left the idle scheduling class) and whether a refit is
        running now (``refit_running``: no call explores meanwhile, so a stream that stops
        exploring shows why)."""
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
                "refit_starved": getattr(self._refit, "starved", None), "refit_running": self._refit_lock.locked(),
                "active": not self._stopped}


OPTIONS = tuple(p for p in inspect.signature(Refiner.__init__).parameters   # refine(**options); the check
                if p not in ("self", "dispatcher", "computation", "store", "device_id", "on_stop", "check"))   # is the cv's
