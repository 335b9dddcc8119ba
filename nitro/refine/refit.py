"""Refits of refining mode: the default refit, when one is due and whether its model serves
(the start model holding on the rows, duels between the two models' choices), run in a
background thread or child process and swapped in (see :mod:`nitro.refine`)."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..measurement import TimingPolicy
from ..model import SelectorModel

REFIT_GROWTH = 0.125   # ... or this share of the rows so far, if more: O(n) total refit work over n rows
MIN_COMPLETE = 20      # complete rows before a non-kernel model is refitted as an on-device SVM
HOLDS = 1.0 - TimingPolicy.tie   # the start model stays while it reaches this share of the best timed
FAILED_DUEL = math.log(10.0)   # a duel whose one side raised: the other side was 10 times as fast


def default_refit(base: SelectorModel, X: np.ndarray, times: np.ndarray,
                  min_complete: int = MIN_COMPLETE) -> SelectorModel | None:
    """The refit of refining mode: a new model from ``base`` and the target rows ``X`` (n, d)
    with ``times`` (n, len(base.variants); NaN = not run, +inf = failed), or ``None`` to keep
    the current one. Kernel models: :func:`nitro.transfer.fewshot.refine_model`. Other kinds:
    an on-device SVM (:func:`nitro.learn.fit_selector`) on the rows that time every variant,
    once there are ``min_complete`` of them with at least two different fastest variants."""
    if base.kind == "kernel":
        from ..transfer.fewshot import refine_model
        return refine_model(base, X, times)
    complete = _complete(times)
    if complete.sum() < min_complete:
        return None
    T = np.where(np.isfinite(times[complete]), times[complete], np.nan)
    if len(set(np.nanargmin(T, axis=1).tolist())) < 2:
        return None
    from ..learn import SVMSelector, fit_selector
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


class RefitMixin:
    """The refits and duels of a :class:`nitro.refine.Refiner` (its state is set up there)."""

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
        from ..refit_worker import RefitProcess, unpicklable
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
