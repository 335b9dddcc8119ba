"""Offline replay of refining mode (``nitro evaluate DIR --online``).

For each target device of a measurement directory, the zero-shot model is built from the
other devices (Kronecker KRR as ``tune_from_source`` builds it, optionally with the CV-DFS
ensemble of device-feature subsets), then a stream of the target's training inputs (those
timed for every variant there, so that every choice's cost is known; shuffled passes, ``seed``)
is dispatched through the same :class:`nitro.refine.Refiner` that serves real
calls, except that running a variant means reading its recorded time on the target
(:class:`RecordedRun`) and refits are synchronous, so that a replay is deterministic (up to rounding, README). A refit
(default ``"trees"``) fits per-variant boosted trees on the sources' rows and the target rows
explored so far, each row teaching only the variants it ran
(:class:`nitro.transfer.fewshot_trees.TreesRefit`); ``"kernel"`` corrects the zero-shot kernel
model instead (:func:`nitro.transfer.fewshot.refine_model`, what refining mode does without
the sources' rows).

Reported per target and as the mean over the main group's targets: the share of calls that
explored; the stream's time against its optimum (Σ time spent / Σ fastest time, explored
calls counting every variant they ran), for the zero-shot model alone and with refining, and
the part of it that explored calls added (``exploring_percent_of_optimum``); and
the zero-shot and refined models' % of the optimum on the target's test inputs
(:func:`nitro.metrics.fraction_of_optimum`). The split is :func:`nitro.evaluate.split`'s, so
the figures compare with ``nitro evaluate``'s zero- and few-shot rows.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .dataset import Measurements
from .dispatch import Dispatcher
from .learn.kron import TIME_WEIGHT, check_time_weight
from .metrics import fraction_of_optimum
from .model import SelectorModel
from .progress import progress_bar
from .refine import (AUDIT, BUDGET, CHECKED_OPTIONS, QUANTILE, REFIT_EVERY, TIME_BUDGET, Refiner, check_options,
                     time_bound)

PASSES = 10   # default stream: ten shuffled passes over the target's training inputs


class RecordedFailure(RuntimeError):
    """A variant whose recorded time on the target is missing: it failed there."""


class RecordedRun:
    """Runs a variant of one input by reading its recorded time: ``run(variant) -> (None,
    seconds)`` (the replay's counterpart of :class:`nitro.refine.TimedRun`)."""

    __slots__ = ("times", "index")

    def __init__(self, times: np.ndarray, index: dict[str, int]):
        self.times, self.index = times, index

    def __call__(self, variant: str):
        t = float(self.times[self.index[variant]])
        if not math.isfinite(t):
            raise RecordedFailure(f"{variant} has no recorded time on this input")
        return None, t


def zero_shot_model(data, sources: list[int], train: np.ndarray, target: int, cvdfs: bool = False,
                    max_size: int = 3, n_jobs: int | None = None, prep=None) -> SelectorModel:
    """The target's zero-shot kernel model from ``sources`` (device indices of ``data``, a
    :class:`nitro.transfer.data.TransferData`) on the ``train`` inputs: full-set Kronecker KRR,
    or the CV-DFS subset ensemble with ``cvdfs`` (``prep``: those arrays, already built)."""
    from .transfer.fit import export_model, transfer_scores
    from .transfer.prepare import Prepared
    prep = prep or Prepared.build(data, sources, train, extra_devices=[target])
    subsets = [prep.features]
    if cvdfs:
        from .transfer.cvdfs import cv_dfs
        result = cv_dfs(prep, max_size=max_size, selection="ensemble", n_jobs=n_jobs, progress=False)
        subsets = [[data.device_features.index(f) for f in s] for s in result.subsets]
    _, beta, mu = transfer_scores(prep, target, subsets)
    return export_model(prep, beta, mu, list(data.input_features), {
        "method": "zero-shot replay", "target": data.devices[target],
        "sources": [data.devices[s] for s in sources], "cv_dfs": bool(cvdfs)})


def replay(model: SelectorModel, X: np.ndarray, times: np.ndarray, stream: np.ndarray, *,
           budget: float = BUDGET, time_budget: float | None = TIME_BUDGET, candidates: int | None = 2,
           quantile: float = QUANTILE, refit_every: int = REFIT_EVERY, seed: int = 0, **options) -> dict:
    """Dispatch the inputs ``stream`` (indices into ``X`` (n, d) and ``times`` (n, variants
    of ``model``)) in refining mode, with recorded times for runs and synchronous refits.
    Returns the refined model, the refiner's stats and the stream's time against its optimum."""
    variants = list(model.variants)
    index = {v: j for j, v in enumerate(variants)}
    dispatcher = Dispatcher(variants, list(model.input_features), variants[0])
    dispatcher.set_model(model)
    refiner = Refiner(dispatcher, "replay", budget=budget, time_budget=time_budget, candidates=candidates,
                      quantile=quantile, refit_every=refit_every, seed=seed, background=False, **options)
    best = np.where(np.isfinite(times), times, np.inf).min(axis=1)
    spent = 0.0
    for i in stream:
        values = X[i].tolist()
        serving = dispatcher.model
        choice = dispatcher.choose(values, serving)
        candidate = refiner.tick()
        ex = refiner.maybe_explore(values, choice, RecordedRun(times[i], index), serving) if candidate else None
        if ex is None:
            seconds = float(times[i, index[choice]])
            spent += seconds
            if candidate:                  # a candidate call is timed, as in production
                refiner.observe(values, seconds)
        else:
            spent += ex.spent
    stats = refiner.stop()
    optimum = float(best[stream].sum())
    return {"model": dispatcher.model, "stats": stats, "stream_ratio": spent / optimum,
            "extra_ratio": stats["extra_seconds"] / optimum}


def _target(data, t: int, sources: list[int], train, test, *, passes: int, stream_length: int | None,
            seed: int, cvdfs: bool, max_size: int, n_jobs, refit: str, time_weight: float, options: dict,
            cross_kind: bool = False) -> dict:
    from .transfer.fewshot_trees import TreesRefit
    from .transfer.prepare import Prepared
    started = time.perf_counter()
    times = data.times[t]
    train = train[np.isfinite(times[train]).any(axis=1)]
    test = test[(np.isfinite(times[test]).any if cross_kind else np.isfinite(times[test]).all)(axis=1)]
    prep = Prepared.build(data, sources, train, extra_devices=[t], time_weight=time_weight)
    base = zero_shot_model(data, sources, train, t, cvdfs=cvdfs, max_size=max_size, n_jobs=n_jobs, prep=prep)
    if refit == "trees":
        options = {**options, "refit": TreesRefit(data, sources, prep.train, t, prep.features, random_state=seed)}
    rng = np.random.default_rng([seed, t])
    timed = train[np.isfinite(times[train]).all(axis=1)]     # a call's time is known whatever runs
    if not len(timed):
        raise ValueError(f"{data.devices[t]}: no training input is timed for every variant, so no stream can be replayed")
    length = stream_length if stream_length is not None else passes * len(timed)
    passes_needed = -(-length // len(timed))
    stream = np.concatenate([rng.permutation(timed) for _ in range(passes_needed)])[:length]
    r = replay(base, data.X, times, stream, seed=seed, **options)
    best = np.where(np.isfinite(times), times, np.inf).min(axis=1)
    zero_choice = base.predict_index(data.X[stream])
    s = r["stats"]
    return {
        "explored_percent": 100.0 * s["explored"] / max(s["calls"], 1),
        "stream_calls": int(length), "explored_calls": s["explored"], "target_inputs": s["target_inputs"],
        "refits": s["refits"], "refits_lost": s["refits_lost"], "duel_inputs": s["duel_inputs"],
        "refit_errors": s["refit_errors"], "measured_loss_percent": 100.0 * s["measured_loss"],
        "stream_time_ratio": r["stream_ratio"], "exploring_percent_of_optimum": 100.0 * r["extra_ratio"],
        "zero_shot_stream_time_ratio": float(times[stream, zero_choice].sum() / best[stream].sum()),
        "zero_shot_percent": 100.0 * fraction_of_optimum(times[test], base.predict_index(data.X[test])),
        "refined_percent": 100.0 * fraction_of_optimum(times[test], r["model"].predict_index(data.X[test])),
        "seconds": time.perf_counter() - started,
    }


KEYS = ("explored_percent", "zero_shot_stream_time_ratio", "stream_time_ratio", "exploring_percent_of_optimum",
        "zero_shot_percent", "refined_percent")


def evaluate_online(m: Measurements, variants=None, devices=None, test_size: float = 0.5, seed: int = 0,
                    passes: int = PASSES, stream_length: int | None = None, budget: float = BUDGET,
                    time_budget: float | None = TIME_BUDGET, candidates: int | None = 2,
                    quantile: float = QUANTILE, refit_every: int = REFIT_EVERY,
                    cvdfs: bool = False, max_size: int = 3, n_jobs: int | None = None, refit: str = "trees",
                    progress: bool = False, time_weight: float = TIME_WEIGHT, holdout_by: str = "device",
                    targets=None, **options) -> dict:
    """Replay refining mode for every target of the split of :func:`nitro.evaluate.split`
    (see the module documentation). ``stream_length`` calls per target (default ``passes``
    shuffled passes over its training inputs); ``refit``: ``"trees"`` (the sources' rows and
    the target's in per-variant boosted trees, :class:`nitro.transfer.fewshot_trees.TreesRefit`)
    or ``"kernel"`` (the zero-shot model's residual correction,
    :func:`nitro.transfer.fewshot.refine_model`); ``progress``: a bar over the targets (on a
    terminal only); ``time_weight``: the zero-shot kernel fit's (:func:`nitro.learn.kron.time_weights`);
    ``holdout_by``: as :func:`nitro.evaluate.evaluate`'s, a column whose family is left out of each
    target's sources (a new architecture refined from the others); ``targets``: only these devices
    replayed (every other device still a source); the other options are the refiner's."""
    from .evaluate import holdout_families, holdout_targets, only_targets, split
    if passes < 1 or (stream_length is not None and stream_length < 1):
        wrong = f"passes={passes}" if passes < 1 else f"stream_length={stream_length}"
        raise ValueError(f"a replayed stream needs at least one call: passes and stream_length are at least 1, "
                         f"got {wrong}")
    check_options("replay", budget=budget, time_budget=time_budget, candidates=candidates, quantile=quantile,
                  refit_every=refit_every, **{k: v for k, v in options.items() if k in CHECKED_OPTIONS})
    if refit not in ("trees", "kernel"):
        raise ValueError(f"refit must be 'trees' or 'kernel', got {refit!r}")
    time_weight = check_time_weight(time_weight)
    started = time.perf_counter()
    family = holdout_families(m, holdout_by)
    data, idx, others, train, test, notes = split(m, variants=variants, devices=devices, test_size=test_size, seed=seed,
                                                       targets=targets)
    group, evaluated, skipped = holdout_targets(data, idx, family, holdout_by)
    evaluated, others = only_targets(data, evaluated, others, [data.devices[i] for i in idx], targets)
    notes += skipped
    refiner_options = dict(budget=budget, time_budget=time_bound(time_budget), candidates=candidates,
                           quantile=quantile, refit_every=refit_every, **options)
    common = dict(passes=passes, stream_length=stream_length, seed=seed, cvdfs=cvdfs, max_size=max_size,
                  n_jobs=n_jobs, refit=refit, time_weight=time_weight, options=refiner_options)
    sources = {t: [s for s in idx if group[s] != group[t]] for t in evaluated}
    targets = {data.devices[t]: {**_target(data, t, sources[t], train, test, **common),
                                 "sources": [data.devices[s] for s in sources[t]]}
               for t in progress_bar(evaluated, desc="targets", unit="device", enabled=progress)}
    cross = {}
    for o in others:
        t = data.device_index(o)
        if np.isfinite(data.times[t, train]).any() and np.isfinite(data.times[t, test]).any():
            cross[o] = _target(data, t, idx, train, test, cross_kind=True, **common)
    return {
        "variants": list(data.variants), "devices": [data.devices[i] for i in idx], "cross_kind_devices": others,
        "notes": notes, "holdout_by": holdout_by,
        "families": {data.devices[i]: group[i] for i in idx} if holdout_by != "device" else {},
        "n_train": int(len(train)), "n_test": int(len(test)), "seed": seed, "cv_dfs": cvdfs, "time_weight": time_weight,
        "refiner": {k: v for k, v in refiner_options.items() if not callable(v)}, "refit": refit,
        "passes": passes if stream_length is None else None, "stream_length": stream_length,
        "targets": targets, "cross_kind": cross,
        "mean": {k: float(np.mean([r[k] for r in targets.values()])) for k in KEYS} if targets else {},
        "worst": {k: float((np.min if k.endswith("percent") and k != "explored_percent" else np.max)(
            [r[k] for r in targets.values()])) for k in KEYS} if targets else {},
        "seconds": time.perf_counter() - started,
    }


def format_online(r: dict) -> str:
    o = r["refiner"]
    stream = f"{r['passes']} shuffled passes over the training inputs" if r["passes"] else f"{r['stream_length']} calls"
    width = max(24, *(len(n) + 14 for n in r["cross_kind"]), *(len(n) + 2 for n in r["targets"]))
    family = r.get("holdout_by", "device")
    held = "" if family == "device" else f" (each {family} held out of its targets' sources: " + ", ".join(
        f"{d}={f}" for d, f in r["families"].items()) + ")"
    lines = [f"refining mode replayed{held}: {len(r['targets'])} targets, variants {', '.join(r['variants'])}, "
             f"{r['n_train']} training / {r['n_test']} test inputs (seed {r['seed']}), {stream}",
             f"budget {o['budget']} of calls and {o.get('time_budget') or 'no bound on'} of time, "
             f"{o['candidates'] or 'all'} candidates per explored call, quantile "
             f"{o['quantile']}, audits {o.get('audit', AUDIT)} of the sure ones, refit every {o['refit_every']} rows "
             "(or an eighth more) by "
             f"{'boosted trees on the sources and target rows' if r.get('refit') == 'trees' else 'kernel correction'}; zero-shot: "
             f"{'CV-DFS ensemble' if r['cv_dfs'] else 'full-set Kronecker KRR'}"
             + (f", its inputs weighted by their time^{r['time_weight']:g}" if r.get("time_weight") else ""),
             "stream time = sum of time spent / sum of the fastest variant's time (exploring: the part explored calls "
             "added, % of that optimum); quality = % of optimum on test inputs",
             "", f"{'target':<{width}}{'explored %':>11}{'stream 0-shot':>14}{'stream refined':>15}{'exploring':>10}"
             f"{'test 0-shot':>12}{'test refined':>13}{'refits':>7}"]

    def row(name, v, refits=""):
        return (f"{name:<{width}}{v['explored_percent']:>11.2f}{v['zero_shot_stream_time_ratio']:>14.4f}"
                f"{v['stream_time_ratio']:>15.4f}{v['exploring_percent_of_optimum']:>9.2f}%"
                f"{v['zero_shot_percent']:>12.1f}{v['refined_percent']:>13.1f}{refits:>7}")
    for name, v in r["targets"].items():
        lines.append(row(name, v, v["refits"]))
    if r["mean"]:                   # none where only cross-kind devices were named (--targets)
        lines.append(row("mean", r["mean"]))
        lines.append(row("worst", r["worst"]))
    for name, v in r["cross_kind"].items():
        lines.append(row(f"{name} (cross-kind)", v, v["refits"]))
    lines += [f"note: {n}" for n in r.get("notes", [])]
    lines.append(f"total {r['seconds']:.0f} s")
    return "\n".join(lines)
