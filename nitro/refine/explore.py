"""The exploration policy of refining mode: which calls explore (margins, audits, the call and
time budgets), what an explored call runs, and the rows its timings make (see :mod:`nitro.refine`)."""
from __future__ import annotations

import bisect
import hashlib
import math
import queue
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..measurement import TimingPolicy
from ..row import TrainingRow
from ..model import SelectorModel
from .refit import REFIT_GROWTH, duel_gain

SPREAD = 4             # an explored call may take at most 1/SPREAD of the time budget left
MAX_ROWS = 20_000      # target rows kept in memory for refits, the most recent (older ones stay in the store)
REGRET_WINDOW = 64     # explored calls whose measured loss can raise the time budget


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


def _holds(dispatcher, variant: str, values) -> bool:
    """Whether ``variant``'s constraints allow it here; one that cannot be evaluated on these
    values (it raises) keeps the variant from exploring, where plain dispatch never asked it."""
    try:
        return dispatcher._valid(variant, values)
    except Exception:
        return False


class ExploreMixin:
    """The decision and the rows of a :class:`nitro.refine.Refiner` (its state is set up there);
    the same for real calls and for the replay of recorded timings."""

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
        :attr:`measured_loss` where higher (see :mod:`nitro.refine`)."""
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
