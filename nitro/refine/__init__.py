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

**Recording and refitting.** Rows (:class:`nitro.row.TrainingRow`, input id from a hash
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

Layout: :mod:`~nitro.refine.explore` (which calls explore, what they run, the rows),
:mod:`~nitro.refine.refit` (refits and duels), :mod:`~nitro.refine.writer` (the store writer),
:mod:`~nitro.refine.options` (defaults and checks) and :mod:`~nitro.refine.refiner` (the
:class:`Refiner` that holds their state, and its control).
"""
from __future__ import annotations

from .explore import MAX_ROWS, REGRET_WINDOW, SPREAD, Exploration, TimedRun, WrongResult, feature_id
from .options import (AUDIT, BUDGET, CHECKED_OPTIONS, INTEGER_OPTIONS, OPTIONAL_OPTIONS, QUANTILE, REFIT_EVERY,
                      REFIT_IN, STORE_SCHEMES, TIME_BUDGET, check_options, time_bound, warn_if_far_and_sure)
from .refiner import OPTIONS, Refiner
from .refit import FAILED_DUEL, HOLDS, MIN_COMPLETE, REFIT_GROWTH, default_refit, default_refit_keeps, duel_gain
from .writer import EXIT_FLUSH

__all__ = ["AUDIT", "BUDGET", "CHECKED_OPTIONS", "EXIT_FLUSH", "Exploration", "FAILED_DUEL", "HOLDS",
           "INTEGER_OPTIONS", "MAX_ROWS", "MIN_COMPLETE", "OPTIONAL_OPTIONS", "OPTIONS", "QUANTILE", "REFIT_EVERY",
           "REFIT_GROWTH", "REFIT_IN", "REGRET_WINDOW", "Refiner", "SPREAD", "STORE_SCHEMES", "TIME_BUDGET",
           "TimedRun", "WrongResult", "check_options", "default_refit", "default_refit_keeps", "duel_gain",
           "feature_id", "time_bound", "warn_if_far_and_sure"]
