"""The few-shot model: what a handful of inputs timed on the target make of the zero-shot one.

Two learners serve. Boosted trees on the sources' rows and the target's
(:func:`nitro.transfer.fewshot_trees.fit_few_shot_trees`) learn target behaviour no source
shows, but they need target rows to split on, and without them they are a weaker zero-shot
model than the kernel ensemble they replace. The zero-shot kernel model corrected by the
target's rows (:func:`nitro.transfer.fewshot.refine_model`: kernel ridge regression of the
residual) stays the zero-shot model away from those rows. With fewer than ``TREES_FROM`` timed
inputs the correction is the few-shot model, from ``TREES_FROM`` on the trees.

Measured (2026-11-27; the CV-DFS ensemble corrected against the trees, the same k-means picks,
leave-one-device-out and leave-one-family-out on copies of the SpMV data of 150 and 400
matrices and on the whole of it, and on nitro's own CPU histogram and SpMV data: 20 data set ×
protocol runs, `benchmarks/README.md`): with 1, 2, 3 and 5 timed inputs the correction led the
trees by 0.79, 1.33, 0.20 and 0.52 points on average and fell at most 0.47 below the zero-shot
model (the trees up to 2.79 below it); from 6 inputs the trees led or tied (−0.28 at 6, −0.80 at
21).
"""
from __future__ import annotations

import numpy as np

from ..metrics import speedup_vs_best
from ..model import SelectorModel
from .data import TransferData
from .fewshot import refine_model
from .fewshot_trees import fit_few_shot_trees

TREES_FROM = 6   # timed target inputs from which the few-shot model is the trees (fewer: the correction)
FOLDS = 5        # folds of the few-shot model's cross-validation on the target's timed inputs


def learner_for(n_timed: int) -> str:
    """``"trees"`` or ``"correction"``: the few-shot learner for ``n_timed`` target inputs."""
    return "trees" if n_timed >= TREES_FROM else "correction"


def fit_few_shot(zero_shot: SelectorModel, data: TransferData, sources: list[int], train: np.ndarray,
                 target: int, X_target: np.ndarray, target_times: np.ndarray, features: list[int],
                 learner: str | None = None, random_state: int = 0) -> SelectorModel:
    """The few-shot model from the ``zero_shot`` kernel model, the ``sources``' ``train`` rows
    and ``target_times`` (n, v; every variant tried, NaN where one failed or could not run)
    measured on the target at inputs of raw features ``X_target`` (n, d), over the device
    features ``features``: the trees or the correction (``learner``, default by the number of
    inputs where something ran, :func:`learner_for`)."""
    T = np.asarray(target_times, dtype=np.float64)
    learner = learner or learner_for(int(np.isfinite(T).any(axis=1).sum()))
    if learner == "correction":        # a variant that did not run there is the worst choice
        return refine_model(zero_shot, X_target, np.where(np.isnan(T), np.inf, T))
    est = fit_few_shot_trees(data, sources, train, target, X_target, T, features, random_state=random_state)
    values = {data.device_features[c]: float(data.D[target, c]) for c in features}
    return SelectorModel.from_estimator(est, list(zero_shot.input_features), device_features=values,
                                        variants=list(data.variants))


def cross_validated_quality(zero_shot: SelectorModel, data: TransferData, sources: list[int], train: np.ndarray,
                            target: int, X_target: np.ndarray, target_times: np.ndarray, features: list[int],
                            folds: int = FOLDS, random_state: int = 0) -> dict | None:
    """How good the few-shot model of :func:`fit_few_shot` is on the target, measured there:
    each timed input is chosen for by the same learner fitted without its fold (``folds``-fold
    cross-validation over the target rows; leave-one-out with fewer rows) and scored by its
    fraction of the optimum. Returns the mean (``quality``), its standard error over the inputs
    (``stderr``), ``inputs``, ``folds``, the ``learner`` and what a wrong choice costs there
    (``wrong_choice_loss``, :func:`wrong_choice_loss`: the standard error of a few inputs that were all
    chosen right is near 0, and says nothing of the others); ``None`` below :data:`TREES_FROM` timed
    inputs: a fold leaves two or three rows to fit, and three right choices out of three read as
    100 ± 0 (on 400-matrix SpMV data, 3–4 picks gave 100.0 on half the targets, within 3 points of
    measured on 1–3 of 8). The picks are few, so the estimate is rough: ``stderr`` and ``wrong_choice_loss`` say how rough
    (:func:`nitro.transfer.confidence.few_shot_verdict`).
    (:func:`cross_validation_folds`, :func:`fold_choices` and :func:`cross_validated_score` are its
    steps, for a caller that fits the folds in parallel.)"""
    cv = cross_validation_folds(target_times, folds, random_state)
    if cv is None:
        return None
    ok, splits = cv
    choices = [fold_choices(zero_shot, data, sources, train, target, X_target, target_times, features, ok, fit, held,
                            random_state) for fit, held in splits]
    return cross_validated_score(target_times, ok, splits, choices)


def cross_validation_folds(target_times: np.ndarray, folds: int = FOLDS,
                           random_state: int = 0) -> tuple[np.ndarray, list] | None:
    """The target rows where something ran (``ok``) and the folds over them, ``(fit, held)``
    positions in ``ok``; ``None`` below :data:`TREES_FROM` such rows."""
    from sklearn.model_selection import KFold
    ok = np.flatnonzero(np.isfinite(np.asarray(target_times, dtype=np.float64)).any(axis=1))
    if len(ok) < TREES_FROM:
        return None
    return ok, list(KFold(min(folds, len(ok)), shuffle=True, random_state=random_state).split(ok))


def fold_choices(zero_shot: SelectorModel, data: TransferData, sources: list[int], train: np.ndarray, target: int,
                 X_target: np.ndarray, target_times: np.ndarray, features: list[int], ok: np.ndarray,
                 fit: np.ndarray, held: np.ndarray, random_state: int = 0) -> np.ndarray:
    """One fold: the choices on the target rows ``ok[held]`` of the few-shot model fitted on ``ok[fit]``
    (the learner of all ``ok`` rows)."""
    X, T = np.asarray(X_target, dtype=np.float64), np.asarray(target_times, dtype=np.float64)
    model = fit_few_shot(zero_shot, data, sources, train, target, X[ok[fit]], T[ok[fit]], features,
                         learner=learner_for(len(ok)), random_state=random_state)
    return model.predict_index(X[ok[held]])


def cross_validated_score(target_times: np.ndarray, ok: np.ndarray, splits: list, choices: list) -> dict:
    """:func:`cross_validated_quality`'s result from each fold's ``choices``."""
    T = np.asarray(target_times, dtype=np.float64)
    choice = np.zeros(len(ok), dtype=np.int64)
    for (_, held), c in zip(splits, choices):
        choice[held] = c
    ratio = speedup_vs_best(T[ok])
    fraction = ratio[np.arange(len(ok)), choice]
    return {"quality": float(fraction.mean()), "stderr": float(fraction.std(ddof=1) / np.sqrt(len(ok))),
            "inputs": int(len(ok)), "folds": len(splits), "learner": learner_for(len(ok)),
            "wrong_choice_loss": wrong_choice_loss(ratio)}


def sources_wrong_choice_loss(times: np.ndarray) -> float:
    """:func:`wrong_choice_loss` on the sources, the cost of a wrong choice before the target has
    timed anything: the mean over the sources (``times``: sources × inputs × variants) of each
    one's loss on the inputs where some variant ran; 0 where none did."""
    losses = []
    for t in np.asarray(times, dtype=np.float64):
        ran = (np.isfinite(t) & (t > 0)).any(axis=1)
        if ran.any():
            losses.append(wrong_choice_loss(speedup_vs_best(t[ran])))
    return float(np.mean(losses)) if losses else 0.0


def wrong_choice_loss(ratio: np.ndarray) -> float:
    """What a wrong choice costs on the target, from its own timings: the mean over inputs of the
    mean loss ``1 - t_best / t_v`` of the variants other than the fastest (a failed one loses all),
    the cost of a choice made where the timed inputs show nothing (``ratio``: inputs × variants)."""
    if ratio.shape[1] < 2:
        return 0.0
    others = np.sort(ratio, axis=1)[:, :-1]             # every variant but the fastest
    return float((1.0 - others).mean())
