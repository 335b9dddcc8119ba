"""Leave-one-device-out (or leave-one-family-out) evaluation of cross-device variant selection
on a measurement table.

For every target device, everything is trained on the other devices' training inputs and
scored on the target's test inputs by the mean of ``t_best / t_selected`` (% of the
exhaustive optimum). Devices are grouped by their ``kind`` column when there is one: targets
of the largest group (e.g. GPUs) use the rest of that group as sources, and devices of other
kinds are reported separately as cross-kind targets with the whole group as sources.

``best_source_hindsight`` is a ceiling, not a method: the target's test inputs run the
variant that was truly fastest on one source, the best source picked with the target's own
results. Where it is low, the sources do not predict the target well, whatever the learner.

``holdout_by``: ``"device"`` (default) holds out one device at a time; a metadata column of
``devices.csv`` (``arch``) holds out every device of the target's family, so that the sources
are the other families only — the case of a new architecture, which leave-one-device-out
flatters (a target's sibling is always a source). The CV-DFS model's predicted quality
(:mod:`nitro.transfer.confidence`) is reported beside its measured quality. As in
``tune_from_source``, a target whose family no source shares (by the held-out column, or by
``arch`` when one device is held out) is validated without each source's family.
"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from .dataset import Measurements, did_you_mean
from .learn import SELECTORS, SVMSelector, fit_selector
from .learn.kron import TIME_WEIGHT, check_time_weight
from . import memo
from .metrics import fraction_of_optimum, majority_vote, random_fraction
from .progress import progress_bar
from .transfer.analysis import architecture_sensitivity, best_variant_histogram, device_cosine_similarity
from .transfer.baselines import full_set_svm_choices
from .transfer.confidence import FEW_SHOT_SHARE, estimate_quality, few_shot_count, few_shot_verdict
from .transfer.cvdfs import MIN_SOURCES, cv_dfs, family_groups
from .transfer.coverage import MIN_INPUTS as SPLIT_MIN_TRAIN, untimed_variants
from .transfer.data import TransferData
from .transfer.fewshot import pick_inputs
from .transfer.fewshot_model import (TREES_FROM, cross_validated_score, cross_validation_folds, fit_few_shot,
                                     fold_choices, sources_wrong_choice_loss)
from .transfer.fit import export_model, transfer_scores
from .transfer.prepare import COMMON_SHARE, Prepared

METHODS = ["random", "majority", "full_set_svm", "full_set", "cvdfs_frequency", "cvdfs", "few_shot",
           "best_source_hindsight", "trained_on_target"]
FEW_SHOT_BUDGETS = (0.005, 0.01, 0.02, 0.05, 0.1)   # fractions of the training inputs timed on the target
MIN_INPUTS = 20         # inputs an evaluation needs


def _pct(b: float) -> str:
    return f"{100 * b:g}".replace(".", "_")


LABELS = {
    "random": "random (1,000 draws)",
    "majority": "majority of source models",
    "full_set_svm": "full set, SVM concatenation",
    "full_set": "full set, Kronecker KRR",
    "cvdfs_frequency": "CV-DFS, k most frequent",
    "cvdfs": "CV-DFS, subset ensemble",
    **{f"few_shot_{_pct(b)}pct": f"few-shot, {100 * b:g}% of inputs on target" for b in FEW_SHOT_BUDGETS},
    "best_source_hindsight": "ceiling: one source's true best",
    "trained_on_target": "trained on target (SVM)",
}


def _groups(m: Measurements, devices: list[str], targets=None) -> tuple[list[str], list[str]]:
    """The devices of the largest ``kind`` (the targets and their sources) and the others
    (cross-kind targets). Where two kinds are as large, the kind of the named ``targets``
    decides, when they name devices of one of those kinds only."""
    if "kind" not in m.devices.columns:
        return devices, []
    kinds = m.devices.reindex(devices)["kind"].fillna("unknown")
    counts = kinds.value_counts()
    main = counts.index[0]
    if len(counts) > 1 and counts.iloc[0] == counts.iloc[1]:
        largest = set(counts.index[counts == counts.iloc[0]])
        named = {kinds[d] for d in targets or () if d in kinds.index} & largest
        if len(named) != 1:
            shares = ", ".join(f"{k}: {n}" for k, n in counts.items())
            raise ValueError(f"devices.csv column 'kind' splits the devices evenly ({shares}): the targets are the "
                             "devices of the largest kind; name targets of one kind with --targets, or the devices "
                             "with --devices (and their cross-kind targets), or drop the column")
        main = named.pop()
    return [d for d in devices if kinds[d] == main], [d for d in devices if kinds[d] != main]


def holdout_families(m: Measurements, holdout_by: str) -> dict[str, str]:
    """Device → the family held out with it: itself for ``"device"``, else the value of the
    metadata column ``holdout_by`` (a device without one is a family of its own). A numeric
    column (``compute_capability``) groups the devices by its values (9.0 and 9 alike)."""
    if holdout_by == "device":
        return {}
    if holdout_by in m.device_feature_names:
        return {str(d): f"{v:g}" for d, v in m.devices[holdout_by].items() if pd.notna(v)}
    if holdout_by not in m.metadata_names:
        raise ValueError(f"--holdout-by {holdout_by!r}: devices.csv has no such column; metadata columns: "
                         f"{['device'] + list(m.metadata_names)}, numeric ones: {list(m.device_feature_names)}")
    return {d: v for d, v in m.device_metadata(holdout_by).items() if v is not None}


def holdout_targets(data: TransferData, idx: list[int], family: dict[str, str],
                    holdout_by: str) -> tuple[dict[int, str], list[int], list[str]]:
    """Each device index's family (``family``: :func:`holdout_families`; a device without one is
    its own), the targets among ``idx`` whose held-out family leaves at least :data:`MIN_SOURCES`
    sources, and a note on each family that does not (its devices are not evaluated); an error
    when none does."""
    group = {i: family.get(d, d) for i, d in enumerate(data.devices)}
    kept, notes = [], []
    for held in dict.fromkeys(group[t] for t in idx):
        members = [t for t in idx if group[t] == held]
        n = sum(group[s] != held for s in idx)
        if n >= MIN_SOURCES:
            kept += members
        else:
            notes.append(f"not evaluated: {', '.join(data.devices[t] for t in members)} (holding out {holdout_by} "
                         f"{held!r} leaves {n} source device{'s' * (n != 1)}; cross-device methods need "
                         f"{MIN_SOURCES})")
    if not kept:
        raise ValueError(f"holding out by {holdout_by} leaves fewer than {MIN_SOURCES} source devices for every "
                         f"target ({'; '.join(notes)}); use --holdout-by device or add devices")
    return group, sorted(kept), notes


def _few_shot_budget_note(n_train: int) -> list[str]:
    """A note where few-shot budgets time the same number of inputs (few training inputs), so
    that rows labelled with different shares are read as the same experiment, or fewer than
    :data:`TREES_FROM` (where the few-shot model is the zero-shot ensemble corrected, not trees)."""
    counts = {b: max(1, round(b * n_train)) for b in FEW_SHOT_BUDGETS}
    few = min(counts.values()) < TREES_FROM
    if len(set(counts.values())) == len(counts) and not few:
        return []
    shares = ", ".join(f"{100 * b:g}%: {n}" for b, n in counts.items())
    return [f"few-shot budgets in inputs timed on the target, of {n_train} training inputs: {shares}"
            + (f" (below {TREES_FROM} the few-shot model is the zero-shot one corrected by them, not trees)"
               if few else "")]


def only_targets(data: TransferData, evaluated: list[int], others: list[str], main: list[str], targets):
    """The targets (indices of the main group) and cross-kind devices among ``targets`` (device
    names; ``None``: all), every other device staying a source; a name that is neither, or no
    name at all, is refused."""
    if targets is None:
        return evaluated, others
    unknown = [d for d in targets if d not in main and d not in others]
    if unknown or not targets:
        raise ValueError(f"targets {unknown or 'none'}: the devices evaluated are {', '.join(main + others)}")
    return [t for t in evaluated if data.devices[t] in targets], [o for o in others if o in targets]


def check_seed(seed) -> int:
    """``seed`` as a split seed: a whole number of at least 0 (``True``, ``1.5`` and ``-1`` are refused)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"a split seed is a whole number of at least 0, got {seed!r}")
    return int(seed)


def split(m: Measurements, variants=None, devices=None, test_size: float = 0.5, seed: int = 0, targets=None):
    """The evaluation's data and split: ``(data, main, others, train, test, notes)`` with
    ``main`` the device indices of the largest kind, ``others`` the cross-kind device ids,
    training/test input indices drawn by ``seed`` among inputs complete on every main device
    (among those complete on some main device where the former are fewer than ``COMMON_SHARE``
    of them: devices that timed different inputs, each scored on its own), and ``notes`` on
    what was left out and why (reading's notes first). A device without
    features (no row in ``devices.csv``) is left out; so is a cross-kind device that never
    timed one of the kept variants (its choices could not be scored). ``targets`` (device names)
    decides the largest kind where two kinds are as large."""
    notes, table = list(m.notes), m.devices      # table: every device, those left out too
    seed = check_seed(seed)
    if not m.device_ids:
        raise ValueError("no device has a measurement with a valid time (a finite, positive time_s)"
                         + (f": {'; '.join(m.notes)}" if m.notes else ""))
    unknown = [d for d in devices or () if d not in m.device_ids]
    if unknown:
        raise ValueError(f"devices {unknown} have no measurements; measured: {', '.join(m.device_ids)}")
    beyond = [d for d in targets or () if devices and d not in devices]
    if beyond:
        raise ValueError(f"targets {beyond} are not among the devices named ({', '.join(devices)}): name them there "
                         "too (--devices), or leave --devices out")
    devices = list(devices) if devices else m.device_ids
    if not m.device_feature_names:
        raise ValueError("devices.csv has no numeric device-feature column (only "
                         f"{', '.join(['device', *m.metadata_names])}): cross-device transfer describes each device "
                         "by figures such as its bandwidth, cores and clock; add them as numeric columns")
    unlisted = [d for d in devices if d not in m.devices.index]
    featureless = [d for d in devices if d in m.devices.index
                   and not np.isfinite(m.devices.loc[d, m.device_feature_names].to_numpy(dtype=float)).any()]
    if featureless:
        notes.append(f"left out {', '.join(featureless)}: measured, but no device features in devices.csv")
    notes += [f"left out {d}: measured, but devices.csv has no row for it{did_you_mean(d, m.devices.index)}"
              for d in unlisted]
    devices = [d for d in devices if d not in featureless and d not in unlisted]
    if not devices:
        raise ValueError("no measured device has device features in devices.csv: " + "; ".join(notes[len(m.notes):])
                         + "; device names must match between measurements and devices.csv")
    main, others = _groups(m, devices, targets)
    if len(main) < 4:
        apart = f" (devices.csv's 'kind' sets apart {', '.join(others)}; --devices names the ones to use)" if others else ""
        unmeasured = [d for d in m.devices.index if d not in m.device_ids]
        why = "".join(f"; left out {', '.join(ds)}: {reason}" for ds, reason in (
            (featureless, "measured, but no device features in devices.csv"),
            (unlisted, "measured, but devices.csv has no row for it"),
            (unmeasured, "in devices.csv, but no measurement with a valid time")) if ds)
        raise ValueError(f"a cross-device evaluation needs at least 4 devices of one kind (a target and "
                         f"{MIN_SOURCES} or more sources), got {main}{apart}{why}")
    untimed = untimed_variants(m, main)
    unknown = [v for v in variants or () if v not in m.variants]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; measured: {m.variants}")
    variants = list(variants) if variants else [v for v in m.variants if v not in untimed]
    notes += [f"left out variant {v}: never timed on {', '.join(untimed[v])}" for v in m.variants
              if v in untimed and v not in variants]
    if len(variants) < 2:
        raise ValueError(f"fewer than two variants are measured on every device: {variants}")
    lacking = untimed_variants(m.restrict(devices=others, variants=variants, complete=False), others) if others else {}
    for o in [o for o in others if any(o in ds for ds in lacking.values())]:
        notes.append(f"cross-kind {o} not scored: never timed {', '.join(v for v, ds in lacking.items() if o in ds)}")
        others.remove(o)
    m = m.restrict(devices=main + others, variants=variants, complete=False)
    data = TransferData.from_measurements(m)
    notes += _unknown_feature_notes(data, table)
    idx = [data.device_index(d) for d in main]
    D = data.D[idx]
    same = [f for j, f in enumerate(data.device_features) if np.isfinite(D[:, j]).all() and np.ptp(D[:, j]) == 0]
    if same and len(same) == len(data.device_features):
        notes.append("no device feature differs between the devices: cross-device models see them all alike")
    elif same:
        notes.append(f"device feature{'s' * (len(same) > 1)} {', '.join(same)} the same on every device: no help in telling them apart")
    complete, somewhere = data.complete_inputs(main), data.complete_inputs(main, some=True)
    if len(complete) >= max(MIN_INPUTS, COMMON_SHARE * len(somewhere)):
        if len(complete) < len(data.inputs):
            missing = ~np.isfinite(data.times[idx]).all(axis=0)          # (inputs, variants): untimed somewhere
            why = ", ".join(f"{v} on {n}" for v, n in zip(data.variants, missing.sum(axis=0).tolist()) if n)
            notes.append(f"{len(complete)} of {len(data.inputs)} inputs are timed for every variant on every device "
                         f"and evaluated; the others are left out (inputs without a time somewhere, by variant: "
                         f"{why}; a variant that fails on many inputs is better left out with --variants, or "
                         "excluded there by a constraint)")
    elif len(somewhere) >= MIN_INPUTS:       # devices that timed different inputs: each its own
        notes.append(f"only {len(complete)} of the {len(somewhere)} inputs timed for every variant on some device "
                     f"are timed so on every device: split among all {len(somewhere)}, each target is scored on the "
                     "test inputs it timed for every variant, and the sources learn from the training inputs they timed")
        complete = somewhere
    else:
        raise ValueError(f"only {len(somewhere)} inputs are timed for every variant on some device; "
                         f"an evaluation needs at least {MIN_INPUTS}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(complete)
    n_test = int(round(test_size * len(perm)))
    if n_test < 1 or len(perm) - n_test < SPLIT_MIN_TRAIN:
        raise ValueError(f"test size {test_size:g} leaves {len(perm) - n_test} training and {n_test} test inputs of the "
                         f"{len(perm)} evaluated: a split needs at least {SPLIT_MIN_TRAIN} training inputs (a "
                         f"cross-device model's fewest) and 1 test input; give a test size between "
                         f"{1 / len(perm):.3g} and {(len(perm) - SPLIT_MIN_TRAIN) / len(perm):.3g}")
    return data, idx, others, np.sort(perm[n_test:]), np.sort(perm[:n_test]), notes


def _unknown_feature_notes(data: TransferData, table: pd.DataFrame) -> list[str]:
    """Notes on the device features unknown on some evaluated devices, one per set of devices (a
    data set of CPUs and GPUs lacks dozens of features on one kind or the other); ``table``, the
    whole device table, tells a feature empty everywhere from one given only on devices left out."""
    by_devices: dict[tuple, list[str]] = {}
    for j, f in enumerate(data.device_features):
        by_devices.setdefault(tuple(d for d, v in zip(data.devices, data.D[:, j]) if not np.isfinite(v)), []).append(f)
    notes = []
    for unknown, names in by_devices.items():
        if len(unknown) == len(data.devices):
            for nowhere, group in ((True, [f for f in names if table[f].isna().all()]),
                                   (False, [f for f in names if table[f].notna().any()])):
                if group:
                    notes.append(f"device feature{'s' * (len(group) > 1)} {', '.join(group)} "
                                 f"{'is' if len(group) == 1 else 'are'} empty on every "
                                 f"{'device' if nowhere else 'evaluated device'}: not used")
        elif unknown:
            notes.append(f"device feature{'s' * (len(names) > 1)} {', '.join(names)} unknown on {', '.join(unknown)}: "
                         f"not used where {'that device is' if len(unknown) == 1 else 'those devices are'} involved")
    return notes


def _few_shot_choices(zero_shot, data, sources, train, t, picks, feats, test) -> np.ndarray:
    """Choices on the ``test`` inputs of the few-shot model given the target's times at ``picks``."""
    model = fit_few_shot(zero_shot, data, sources, train, t, data.X[picks], data.times[t, picks], feats)
    return model.predict_index(data.X[test])


def evaluate(m: Measurements, variants=None, devices=None, test_size: float = 0.5, seed: int = 0,
             methods=None, max_size: int = 3, k: int = 1, n_jobs: int | None = None,
             progress: bool = False, cross_features: str = "cvdfs", holdout_by: str = "device",
             time_weight: float = TIME_WEIGHT, targets=None) -> dict:
    """Evaluate every method with each device of the main group as the target (see module doc);
    ``targets``: only these devices (every other device still a source), since the cost grows
    with targets × sources (about a minute per target at 12 devices × 10,000 inputs on 2 cores, after
    a fixed 2 minutes of on-device SVMs).
    Methods named after selectors (``svm``, ``regression``, ... in :data:`nitro.learn.SELECTORS`)
    are compared side by side on- and cross-device (:mod:`nitro.comparison`). ``time_weight``:
    the kernel models' weighting of the training inputs by their time (:func:`nitro.learn.kron.time_weights`)."""
    started = time.perf_counter()        # "total": the on-device fits below included
    time_weight = check_time_weight(time_weight)
    methods = list(methods or METHODS)
    unknown = set(methods) - set(METHODS) - set(SELECTORS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; known: {METHODS} and the selectors {list(SELECTORS)}")
    selectors = [n for n in methods if n in SELECTORS and n not in METHODS]
    methods = [n for n in methods if n in METHODS]
    family = holdout_families(m, holdout_by)
    data, idx, others, train, test, notes = split(m, variants, devices, test_size, seed, targets)
    main, variants = [data.devices[i] for i in idx], data.variants
    group, evaluated, skipped = holdout_targets(data, idx, family, holdout_by)
    notes += skipped
    evaluated, others = only_targets(data, evaluated, others, main, targets)
    if "few_shot" in methods:
        notes += _few_shot_budget_note(len(train))
    # validation as tune_from_source does it: without each source's family where the target's is
    # new (by the held-out column, or leaving one device out by `arch` where the target has one)
    arch = m.device_metadata("arch") or {}
    lineage = {i: arch.get(d) for i, d in enumerate(data.devices)} if holdout_by == "device" else group
    column = "arch" if holdout_by == "device" else holdout_by
    unlabelled = [d for d in main if (arch if holdout_by == "device" else family).get(d) is None]
    if unlabelled and (arch or holdout_by != "device"):
        notes.append(f"{column} unknown on {', '.join(unlabelled)}: each is a family of its own")

    on_device = {}
    if {"majority", "trained_on_target"} & set(methods):
        for d in progress_bar(idx + [data.device_index(o) for o in others], desc="on-device SVMs", unit="device",
                              enabled=progress):
            timed = np.isfinite(data.times[d, train]).any()       # fit_selector drops untimed inputs
            on_device[d] = (fit_selector(SVMSelector(), data.X[train], data.times[d, train]).predict(data.X[test])
                            if timed else None)

    def run_target(t: int, sources: list[int]) -> tuple[dict, dict]:
        inner = family_groups(lineage, sources, t)   # a new family: validated without each source's
        times = data.times[t, test]
        ok = np.isfinite(times).all(axis=1) if t in idx else np.isfinite(times).any(axis=1)   # see split
        times, test_t = times[ok], test[ok]
        pick = {}
        res, info = {}, {}
        if "random" in methods:
            res["random"] = random_fraction(times)
        if "majority" in methods:
            pick["majority"] = majority_vote(np.array([on_device[s][ok] for s in sources]), len(variants))
        if "best_source_hindsight" in methods:   # no model: a source's own fastest variants, on the
            ceilings = []                          # test inputs it timed (most of them, or it is no ceiling)
            for s in sources:
                own = np.isfinite(data.times[s, test_t]).any(axis=1)
                if own.sum() >= 0.5 * len(test_t):
                    ceilings.append(fraction_of_optimum(times[own], np.maximum(data.labels(s, test_t[own]), 0)))
            if ceilings:
                res["best_source_hindsight"] = max(ceilings)
        if "trained_on_target" in methods and on_device.get(t) is not None:
            pick["trained_on_target"] = on_device[t][ok]
        if "full_set_svm" in methods:
            pick["full_set_svm"] = full_set_svm_choices(data, sources, train, t, test_t)
        if {"full_set", "cvdfs", "cvdfs_frequency", "few_shot"} & set(methods):
            prep = Prepared.build(data, sources, train, extra_devices=[t], time_weight=time_weight)
            loss = sources_wrong_choice_loss(data.times[np.ix_(sources, train)])   # sizes the advised few-shot count
            scores, _, _ = transfer_scores(prep, t, [prep.features], inputs=test_t)
            if "full_set" in methods:
                pick["full_set"] = scores.argmax(axis=1)
            zero_shot = None            # the CV-DFS ensemble as a model: few-shot corrects it
            for name, selection in (("cvdfs", "ensemble"), ("cvdfs_frequency", "frequency")):
                if name in methods or (name == "cvdfs" and "few_shot" in methods):
                    r = cv_dfs(prep, max_size=max_size, k=k, selection=selection, n_jobs=n_jobs, progress=progress,
                               groups=inner)
                    cols = [[data.device_features.index(f) for f in s] for s in r.subsets]
                    scores, beta, mu = transfer_scores(prep, t, cols, inputs=test_t)
                    if name == "cvdfs":
                        zero_shot = export_model(prep, beta, mu, list(data.input_features), {})
                    if name not in methods:
                        continue
                    pick[name] = scores.argmax(axis=1)
                    info[name] = {"features": r.features, "n_subsets": len(r.subsets), "seconds": r.seconds,
                                  "validated_without_family": inner is not None,
                                  "frequencies": r.frequencies, "held_out": r.held_out,
                                  "confidence": estimate_quality(scores, r.held_out, prep.D[:, prep.features],
                                                                 sources, t, data.devices,
                                                                 new_family=inner is not None,
                                                                 wrong_choice_loss=loss)}
            if "few_shot" in methods:   # a few of the target's inputs: the ensemble corrected, or trees
                feats = prep.features
                pool = train[np.isfinite(data.times[t, train]).all(axis=1)]    # what the target can be asked
                picks = {b: pool[pick_inputs(prep.X[pool], max(1, round(b * len(pool))))] for b in FEW_SHOT_BUDGETS}
                # the count a low estimate advises (2%, at least 6, and enough to vouch for 90% if all go
                # right) is also cross-validated, as a user gets it
                advised = min(few_shot_count(len(pool), loss), len(pool))
                same = next((b for b in FEW_SHOT_BUDGETS if len(picks[b]) == advised), None)
                est = picks[same] if same is not None else pool[pick_inputs(prep.X[pool], advised)]
                X_est, T_est = data.X[est], data.times[t, est]
                ok, splits = cross_validation_folds(T_est) or (None, [])
                fitted = list(picks.values()) + ([] if same is not None else [est])
                # the cross-validation's folds and the budgets' fits, each one task: they cost alike
                done = Parallel(n_jobs=n_jobs or -1)(
                    [delayed(fold_choices)(zero_shot, data, sources, prep.train, t, X_est, T_est, feats, ok, fit, held)
                     for fit, held in splits]
                    + [delayed(_few_shot_choices)(zero_shot, data, sources, prep.train, t, p, feats, test_t)
                       for p in fitted])
                folds, fits = done[:len(splits)], done[len(splits):]
                pick.update({f"few_shot_{_pct(b)}pct": c for b, c in zip(picks, fits)})
                estimate = cross_validated_score(T_est, ok, splits, folds) if splits else None
                if estimate is not None:
                    estimate.update(few_shot_verdict(estimate, int(ok.sum())))
                chosen = fits[list(picks).index(same)] if same is not None else fits[-1]
                info["few_shot_advised"] = {"inputs": int(len(est)), "sources_wrong_choice_loss": loss,
                                            "cross_validated": estimate,
                                            "measured": 100.0 * fraction_of_optimum(times, chosen)}
        for name, choice in pick.items():
            res[name] = fraction_of_optimum(times, choice)
        return {k_: 100.0 * v for k_, v in res.items()}, info

    comparison = None
    if selectors:
        from .comparison import compare_selectors
        comparison = compare_selectors(data, idx, train, test, selectors, cross_features=cross_features,
                                       max_size=max_size, n_jobs=n_jobs, progress=progress)
    targets, details, cross = {}, {}, {}
    with memo.kept():     # the held-out sources' full-set SVMs and the input-kernel basis recur from target to target
        for t in progress_bar(evaluated, desc="targets", unit="device", enabled=progress):
            targets[data.devices[t]], details[data.devices[t]] = run_target(t, [s for s in idx if group[s] != group[t]])
        for o in others:
            t = data.device_index(o)
            if np.isfinite(data.times[t, test]).any():
                cross[o], details[o] = run_target(t, idx)
    shown = [n for m_ in methods for n in ([f"few_shot_{_pct(b)}pct" for b in FEW_SHOT_BUDGETS]
                                           if m_ == "few_shot" else [m_])]
    table = {name: [targets[d][name] for d in targets if name in targets[d]] for name in shown}
    analysis_inputs = np.sort(np.concatenate([train, test]))
    main_data = idx
    sub = TransferData(data.inputs, data.input_features, data.X, [data.devices[i] for i in main_data],
                       data.device_features, data.D[main_data], data.variants, data.times[main_data])
    predicted = {d: 100.0 * v["cvdfs"]["confidence"]["predicted_quality"]
                 for d, v in details.items() if "confidence" in v.get("cvdfs", {})}
    measured = {d: res["cvdfs"] for d, res in {**targets, **cross}.items() if "cvdfs" in res}
    trail = trail_calibration(targets, details)
    few = {d: v["few_shot_advised"] for d, v in details.items() if (v.get("few_shot_advised") or {}).get("cross_validated")}
    few_predicted = {d: 100.0 * v["cross_validated"]["quality"] for d, v in few.items()}
    return {
        "variants": variants, "devices": main, "cross_kind_devices": others, "holdout_by": holdout_by, "notes": notes,
        "families": {data.devices[i]: group[i] for i in idx} if holdout_by != "device" else {},
        "n_train": int(len(train)), "n_test": int(len(test)), "seed": seed, "time_weight": time_weight,
        "methods": {name: LABELS[name] for name in shown},
        "targets": targets,
        "mean": {n: float(np.mean(v)) for n, v in table.items() if v},
        "min": {n: float(np.min(v)) for n, v in table.items() if v},
        "cross_kind": cross,
        "details": details,
        "calibration": {
            "predicted": predicted, "measured": measured,
            "within_3_points": sum(abs(predicted[d] - measured[d]) <= 3.0 for d in predicted if d in targets),
            "targets": len([d for d in predicted if d in targets]),
            **({"trail": trail} if trail else {}),
        } if predicted else {},
        "few_shot_calibration": {     # the few-shot model at the advised count, cross-validated on its timed inputs
            "budget": FEW_SHOT_SHARE, "min_inputs": TREES_FROM, "inputs": {d: v["inputs"] for d, v in few.items()},
            "predicted": few_predicted, "measured": {d: v["measured"] for d, v in few.items()},
            "levels": {d: v["cross_validated"]["level"] for d, v in few.items()},
            "within_3_points": sum(abs(few_predicted[d] - few[d]["measured"]) <= 3.0 for d in few_predicted if d in targets),
            "targets": len([d for d in few_predicted if d in targets]),
        } if few_predicted else {},
        "analysis": {
            "best_variant_counts": best_variant_histogram(sub, analysis_inputs),
            "architecture_sensitivity": architecture_sensitivity(sub, analysis_inputs),
            "cosine_similarity_all_features": device_cosine_similarity(
                sub, [j for j in range(len(sub.device_features)) if np.isfinite(sub.D[:, j]).all()]),
        },
        "seconds": time.perf_counter() - started,
        **({"comparison": comparison} if comparison is not None else {}),
    }


BASELINE_METHODS = {"best_single_source": "best_source_hindsight", "majority": "majority",
                    "full_set_svm": "full_set_svm"}   # the estimate's baselines -> the methods measuring them


def trail_calibration(targets: dict, details: dict) -> dict:
    """Per baseline of the zero-shot estimate, over the targets where it and the CV-DFS ensemble
    were both measured: how often the model fell below it, how often the estimate named it
    (``may_trail``), the sum of its ``chance_below`` (the number of falls it expects) and the
    Brier score of those chances against the falls (0 is perfect; always 0.5 scores 0.25)."""
    out = {}
    for name, method in BASELINE_METHODS.items():
        pairs = []
        for d, res in targets.items():
            c = details.get(d, {}).get("cvdfs", {}).get("confidence")
            if c and name in c["baselines"] and "cvdfs" in res and method in res:
                pairs.append((c, res["cvdfs"] < res[method]))
        graded = [(c["baselines"][name]["chance_below"], fell) for c, fell in pairs
                  if c["baselines"][name].get("chance_below") is not None]
        if pairs:
            out[name] = {"targets": len(pairs), "fell_below": sum(fell for _, fell in pairs),
                         "named": sum(name in c["may_trail"] for c, _ in pairs),
                         "expected": float(sum(p for p, _ in graded)) if graded else None,
                         "brier": float(np.mean([(p - fell) ** 2 for p, fell in graded])) if graded else None}
    return out


def evaluate_splits(m: Measurements, seeds, **options) -> dict:
    """:func:`evaluate` on one random split per seed (``options`` as for it), and each
    method's mean over the targets per split, mean and standard deviation over the splits and
    worst target in any split: how much a figure owes to one split of the inputs."""
    seeds = [check_seed(s) for s in seeds]
    if len(seeds) < 2 or len(set(seeds)) < len(seeds):
        raise ValueError(f"evaluating over splits needs two or more different seeds, got {seeds}")
    if options.get("methods") and not set(options["methods"]) & set(METHODS):
        raise ValueError("evaluating over splits reports nitro evaluate's methods "
                         f"({', '.join(METHODS)}), not the side-by-side selector comparison")
    started = time.perf_counter()
    runs = [evaluate(m, seed=s, **options) for s in seeds]
    names = [n for n in runs[0]["methods"] if all(n in r["mean"] for r in runs)]
    summary = {}
    for n in names:
        means, mins = [r["mean"][n] for r in runs], [r["min"][n] for r in runs]
        summary[n] = {"mean_per_split": means, "min_per_split": mins, "mean": float(np.mean(means)),
                      "sd": float(np.std(means, ddof=1)), "worst": float(np.min(mins))}
    calibration, few_shot = ([{k: r[key][k] for k in ("within_3_points", "targets")} if r[key] else {} for r in runs]
                             for key in ("calibration", "few_shot_calibration"))
    return {"seeds": seeds, "holdout_by": runs[0]["holdout_by"], "methods": {n: runs[0]["methods"][n] for n in names},
            "summary": summary, "calibration": calibration, "few_shot_calibration": few_shot, "runs": runs,
            "seconds": time.perf_counter() - started}


def format_splits(r: dict) -> str:
    names = list(r["methods"])
    width = max(len(LABELS[n]) for n in names) + 2
    family = r.get("holdout_by", "device")
    head = "".join(f"{'seed ' + str(s):>9}" for s in r["seeds"])
    lines = [f"leave-one-{family}-out on {len(r['seeds'])} random splits of the inputs (seeds "
             f"{', '.join(map(str, r['seeds']))}): % of exhaustive optimum, mean over the targets per split, "
             "its mean ± sd over the splits, and the worst target in any split", "",
             f"{'method':<{width}}{head}{'mean ± sd':>15}{'worst':>8}"]
    for n in names:
        v = r["summary"][n]
        per = "".join(f"{x:>9.2f}" for x in v["mean_per_split"])
        lines.append(f"{LABELS[n]:<{width}}{per}{v['mean']:>9.2f} ± {v['sd']:<4.2f}{v['worst']:>8.1f}")
    for key, what in (("calibration", "zero-shot estimate"),
                      ("few_shot_calibration", "few-shot at the advised count, cross-validated")):
        cal = [c for c in r.get(key, []) if c]
        if cal:
            lines.append(f"\ncalibration ({what}), predicted within 3 points of measured: "
                         + ", ".join(f"{c['within_3_points']} of {c['targets']}" for c in cal) + " targets")
    lines.append(f"total {r['seconds']:.0f} s")
    return "\n".join(lines)


def format_evaluation(r: dict) -> str:
    names = list(r["methods"])
    if not names:
        from .comparison import format_comparison
        return format_comparison(r["comparison"]) + f"\ntotal {r['seconds']:.0f} s"
    devs = list(r["targets"]) + list(r["cross_kind"])
    width = max(len(LABELS[n]) for n in names) + 2
    col = max(9, *(len(d) for d in devs)) + 1            # whole device names, never cut
    head = "".join(f"{d:>{col}}" for d in devs)
    family = r.get("holdout_by", "device")
    protocol = ("leave-one-device-out" if family == "device" else
                f"leave-one-{family}-out (all devices of the target's {family} held out: "
                + ", ".join(f"{d}={f}" for d, f in r["families"].items()) + ")")
    cross = list(r["cross_kind"])
    lines = [f"{protocol}: {len(r['devices'])} devices, variants {', '.join(r['variants'])}, "
             f"{r['n_train']} training / {r['n_test']} test inputs (seed {r['seed']})"
             + (f", kernel models' inputs weighted by their time^{r['time_weight']:g}" if r.get("time_weight") else ""),
             *(f"note: {n}" for n in r.get("notes", [])),
             f"% of exhaustive optimum on the held-out device; {', '.join(cross)} "
             f"{'is a cross-kind target' if len(cross) == 1 else 'are cross-kind targets'} (not in mean/min)" if cross else
             "% of exhaustive optimum on the held-out device",
             "", f"{'method':<{width}}{head}{'mean':>8}{'min':>8}"]
    for n in names:
        vals = "".join(f"{r['targets'].get(d, r['cross_kind'].get(d, {})).get(n, float('nan')):>{col}.1f}" for d in devs)
        lines.append(f"{LABELS[n]:<{width}}{vals}{r['mean'].get(n, float('nan')):>8.1f}{r['min'].get(n, float('nan')):>8.1f}")
    cal = r.get("calibration")
    if cal:
        pred = [cal["predicted"].get(d, float("nan")) for d in devs]
        conf = {d: r["details"].get(d, {}).get("cvdfs", {}).get("confidence", {}) for d in devs}
        outside = [bool(conf[d].get("outside_sources")) for d in devs]
        lines.append(f"{'predicted (CV-DFS estimate)':<{width}}"
                     + "".join(f"{format(v, '.1f') + '*' * far:>{col}}" for v, far in zip(pred, outside)))
        if any(outside):
            lines.append("  * outside the sources: what they show, not a figure to trust (tune-from-source says "
                         "'no figure to trust' there)")
        low = [d for d in devs if conf[d].get("level") == "low"]
        unsure = [d for d in devs if conf[d].get("level") == "uncertain"]
        lines.append(f"\ncalibration: predicted within 3 points of measured on {cal['within_3_points']} of "
                     f"{cal['targets']} targets; estimate 'low' (few-shot or refining mode advised) on: "
                     f"{', '.join(low) or 'none'}; 'uncertain' (a family no source shares: a check advised) on: "
                     f"{', '.join(unsure) or 'none'}")
        lines += [f"  {d}: " + "; ".join(conf[d].get("low_because", [])) for d in low + unsure]
        for name, label in (("best_single_source", "the best single source in hindsight"),
                            ("majority", "the sources' majority"), ("full_set_svm", "the full-set SVM")):
            chance = {d: c["baselines"][name].get("chance_below") for d, c in conf.items()
                      if name in c.get("may_trail", [])}
            warned = [d if p is None else f"{d} ({100 * p:.0f}%)" for d, p in chance.items()]
            t = cal.get("trail", {}).get(name)
            lines.append(f"estimate 'may fall below {label}' (it did on a held-out source, or its lead there "
                         f"spreads to zero; chance it falls below) on: {', '.join(warned) or 'none'}"
                         + (f"; fell below on {t['fell_below']} of {t['targets']} targets" if t else "")
                         + (f", chances summed {t['expected']:.1f}, Brier {t['brier']:.3f}"
                            if t and t["expected"] is not None else ""))
    few = r.get("few_shot_calibration")
    if few:
        pred = [few["predicted"].get(d, float("nan")) for d in devs]
        lines.append(f"\n{'predicted (few-shot advised, CV)':<{width}}"
                     + "".join(f"{v:>{col}.1f}" if np.isfinite(v) else f"{'—':>{col}}" for v in pred))
        measured = [few.get("measured", {}).get(d, float("nan")) for d in devs]
        lines.append(f"{'measured (few-shot advised)':<{width}}"
                     + "".join(f"{v:>{col}.1f}" if np.isfinite(v) else f"{'—':>{col}}" for v in measured))
        counts = sorted(set(few.get("inputs", {}).values()))
        lines.append(f"few-shot at the advised count ({100 * FEW_SHOT_SHARE:g}% of the training inputs, at least "
                     f"{TREES_FROM}, and as many as could vouch for 90% where a wrong choice costs what it costs the "
                     f"sources: {', '.join(map(str, counts))} inputs here), cross-validated on "
                     f"its timed inputs (each chosen for by the same learner fitted without it), against its measured "
                     f"quality: within 3 points on {few['within_3_points']} of {few['targets']} targets"
                     + ("" if all(np.isfinite(pred)) else f"; —: fewer than {TREES_FROM} inputs timed, no figure"))
        for level, why in (("uncertain", "too few inputs to vouch for 90%"), ("low", "below 90%")):
            named = [d for d in devs if few.get("levels", {}).get(d) == level]
            if named:
                lines.append(f"  few-shot estimate '{level}' ({why}: time more, as tune_from_source advises) on: "
                             + ", ".join(named))
    secs = [v["cvdfs"]["seconds"] for v in r["details"].values() if "cvdfs" in v]
    if secs:
        lines.append(f"\nCV-DFS wall time per target: mean {np.mean(secs):.1f} s, max {np.max(secs):.1f} s")
    sens = r["analysis"]["architecture_sensitivity"]["any_pair_differs"]
    lines.append(f"inputs whose best variant differs between devices: {100 * sens:.1f}%")
    if "comparison" in r:
        from .comparison import format_comparison
        lines += ["", format_comparison(r["comparison"])]
    lines.append(f"total {r['seconds']:.0f} s")
    return "\n".join(lines)
