"""Refining options: their defaults and their checks, made before anything runs (see
:mod:`nitro.refine`)."""
from __future__ import annotations

import inspect
import numbers
import warnings
from urllib.parse import urlsplit

from ..model import SelectorModel

BUDGET = 0.02          # default share of calls that may explore
TIME_BUDGET = 0.01     # default share of the served calls' time that exploring may add
QUANTILE = 0.25        # default share of candidate calls judged uncertain
REFIT_EVERY = 4        # default new target rows between refits
REFIT_IN = "process"   # background refits run in a child process (nitro.refit_worker), or "thread"
AUDIT = 0.1            # share of the sure candidate calls explored all the same: the loss where the model is sure
# (the defaults were compared on the recorded SpMV data with `nitro evaluate DIR --online`:
# see benchmarks/README.md, "Refining mode")

STORE_SCHEMES = ("redis", "rediss", "unix")
INTEGER_OPTIONS = ("candidates", "window", "warmup", "refit_every", "queue_size", "repeats")
OPTIONAL_OPTIONS = ("time_budget", "candidates")     # None: no time bound, every variant


def check_options(computation: str, store=None, refit=None, budget: float = BUDGET,
                  time_budget: float | None = TIME_BUDGET, quantile: float = QUANTILE, candidates: int | None = 2,
                  window: int = 256, warmup: int = 16, refit_every: int = REFIT_EVERY, queue_size: int = 1024,
                  repeats: int = 1, audit: float = AUDIT, refit_in: str = REFIT_IN, device_id: str | None = None,
                  seed: int = 0, background: bool = True) -> None:
    """Refining options checked before anything runs (:class:`Refiner`, and the replay before it
    reads a data set): a wrong type or value is an error naming it, not a failure counted later
    by the writer or refit thread (``store=42``, ``refit="trees"``, ``repeats=2.5``)."""
    _check_types(computation, store, refit, budget=budget, time_budget=time_budget, quantile=quantile,
                 candidates=candidates, window=window, warmup=warmup, refit_every=refit_every,
                 queue_size=queue_size, repeats=repeats, audit=audit)
    if not 0.0 < budget <= 1.0:
        raise ValueError(f"the exploration budget is a share of calls in (0, 1], got {budget}")
    if time_budget is not None and not time_budget > 0.0:
        raise ValueError(f"the time budget is a positive share of the served time (None or inf: no bound; on the "
                         f"command line, 0), got {time_budget}")
    if not 0.0 < quantile <= 1.0:
        raise ValueError(f"quantile is a share of candidate calls in (0, 1], got {quantile}")
    if not 0.0 <= audit <= 1.0:
        raise ValueError(f"audit is a share of the sure candidate calls in [0, 1] (0: none), got {audit}")
    if candidates is not None and candidates < 2:
        raise ValueError(f"an explored call compares at least 2 variants (None: all; on the command line, 0), "
                         f"got candidates={candidates}")
    wrong = [f"{name}={value}" for name, value, least in (("refit_every", refit_every, 1), ("window", window, 1),
             ("warmup", warmup, 0), ("queue_size", queue_size, 1), ("repeats", repeats, 1)) if value < least]
    if wrong:
        raise ValueError(f"{computation}: refit_every, window, queue_size and repeats must be at least 1, warmup "
                         f"at least 0, got {', '.join(wrong)}")
    if refit_in not in ("process", "thread"):
        raise ValueError(f"refit_in is 'process' or 'thread', got {refit_in!r}")
    if not isinstance(background, bool):
        raise TypeError(f"{computation}: background is True (refits beside the calls) or False (refits in the "
                        f"calling thread), got {background!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{computation}: seed is a whole number (the exploring's random draws), got {seed!r}")
    if device_id is not None and not (isinstance(device_id, str) and device_id):
        raise TypeError(f"{computation}: device_id is the non-empty name rows are recorded under, got {device_id!r}")


def time_bound(time_budget: float | None) -> float | None:
    """``time_budget`` as refining keeps it: ``None`` for no bound, which ``float("inf")`` means
    too (a share of time nothing exceeds), else a float. Kept as ``None`` so that an infinite
    budget is no bound at all (no call waits for a first timing) and reports print as JSON."""
    return None if time_budget is None or time_budget == float("inf") else float(time_budget)


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
