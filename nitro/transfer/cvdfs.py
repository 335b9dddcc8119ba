"""Cross-validation device-feature selection (CV-DFS, the paper's Algorithm 2), made fast.

Each source device in turn is a temporary target: every subset (size ≤ ``max_size``) of the
candidate device features trains a model on the other sources by feature concatenation,
chooses variants for the temporary target's training inputs, and is scored by the fraction
of the exhaustive optimum there.

Two ways to turn the scores into a selection:

* ``"frequency"`` (the paper): each temporary target's best subset votes for its features;
  the ``k`` most frequent features are kept.
* ``"ensemble"`` (default): the best ``ensemble_fraction`` (10%) of the subsets by mean score
  over the temporary targets (or the best ``n_ensemble``) are all kept, and the target's model averages their predictions. On
  held-out devices this was both more accurate and much more stable than a single subset,
  whose pick is dominated by noise when sources are few.

Each source's *held-out* result (``CVDFSResult.held_out``: its quality when predicted without it,
what the confidence estimate and its baselines read) comes from subsets chosen without that
source's scores (and, grouped, its family's): the whole selection is validated as it will run on
a new device. Scored with the subsets chosen on every source, a source would be predicted by
subsets picked partly for doing well on it; on the SpMV data (the 8 GPUs and three subsets of
5–6 of them, each in both protocols: 50 targets) that had put the predicted quality 1.6 points
above the measured one on average, 1.25 with the held-out selection.

Fast by design: the inner learner is Kronecker kernel ridge regression on the full grid of
training inputs × sources (:mod:`nitro.learn.kron`), so one eigendecomposition of the input
kernel serves all |S| × Σ C(F, s) fits; each fit is a ≤|S|×|S| eigenproblem plus one matrix
product, with no per-subset hyper-parameter search; beyond ``SCORE_MAX`` training inputs the
candidates are scored on a random sample of them. Temporary targets run in parallel with joblib.
"""
from __future__ import annotations

import itertools
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
from joblib import Parallel, delayed
from joblib.parallel import get_active_backend

from ..learn.kron import device_kernel, varying_columns
from ..metrics import fraction_of_optimum, majority_vote, speedup_vs_best
from ..progress import progress_bar
from .baselines import HELD_OUT_SCORE_MAX, full_set_svm_choices
from .prepare import Prepared

LAMBDA = 1.0
MIN_SOURCES = 3     # each source is held out in turn: at least two remain to fit on
SCORE_MAX = 20000   # training inputs a candidate subset is scored on (a random sample beyond):
                    # the standard error of a mean fraction of the optimum on 20,000 is ~0.1 point


@dataclass
class CVDFSResult:
    """What CV-DFS chose (the device features and subsets of the target's model) and why (each
    temporary target's best subset and score), with its cost."""

    features: list[str]                      # device features kept (union over subsets)
    subsets: list[list[str]]                 # the subsets the target's model uses
    frequencies: dict[str, int]              # feature -> temporary targets whose best subset had it
    best_subsets: dict[str, list[str]]       # temporary target -> its best subset
    scores: dict[str, float]                 # temporary target -> its best subset's score
    models_trained: int
    seconds: float
    held_out: dict[str, dict] = field(default_factory=dict)  # source -> selected model's quality, self-estimate
    settings: dict = field(default_factory=dict)


def subsets_upto(items: list, max_size: int) -> list[tuple]:
    return [s for size in range(1, max_size + 1) for s in itertools.combinations(items, size)]


def family_groups(family: Mapping[int, str | None], sources: list[int], target: int) -> dict[int, str] | None:
    """The ``groups`` to validate a ``target`` without each source's family: source → family
    where the target's ``family`` is known and no source's known family is the target's (a new
    family, the case to validate as it will be used); ``None`` otherwise. A source of unknown
    family is a family of its own (left out of the mapping), so one unlabelled device does not
    switch the new-family validation off for every target."""
    known = {s: family[s] for s in sources if family.get(s) is not None}
    if family.get(target) is None or family[target] in known.values():
        return None
    return known


def held_out_sources(prep: Prepared, temp: int, groups: Mapping[int, str] | None) -> list[int]:
    """The sources a temporary target is predicted from: all others, less (with ``groups``)
    those of its own group, so that a target from a family no source shares is validated
    the way it will be used; at least two are kept."""
    rest = [s for s in prep.sources if s != temp]
    if groups is None:
        return rest
    other = [s for s in rest if groups.get(s, s) != groups.get(temp, temp)]
    return other if len(other) >= 2 else rest


def held_out_duals(prep: Prepared, temp: int, subsets: list[tuple], lam: float, groups=None) -> list[tuple]:
    """The ``subsets``' models ``(h, mu)`` for source ``temp`` trained without it (and without
    its group)."""
    rest = held_out_sources(prep, temp, groups)
    return prep.grid.duals(rest, [device_kernel(prep.D[:, list(sub)], rest, temp) for sub in subsets], lam)


def predict_held_out(prep: Prepared, temp: int, subsets: list[tuple], lam: float, groups=None) -> np.ndarray:
    """Predicted fractions of the optimum (training inputs × variants) on source ``temp`` by
    the mean of the ``subsets``' models trained without it (and without its group): the
    prediction is linear in ``(h, mu)``, so the mean model predicts the mean."""
    duals = held_out_duals(prep, temp, subsets, lam, groups)
    return prep.grid.predict_train(np.mean([h for h, _ in duals], axis=0), np.mean([mu for _, mu in duals], axis=0))


def held_out_results(prep: Prepared, subsets: list[tuple] | Mapping[int, list[tuple]], lam: float = LAMBDA,
                     groups=None, n_jobs: int | None = None) -> dict[str, dict]:
    """Per source, the quality (fraction of the optimum, with its standard error over the
    inputs) and self-estimate (mean best score) of the ``subsets``' model fitted without it: how well it transfers to devices it has not seen
    (nothing with a single source: there is nothing to fit it without). ``subsets``: one list
    for every source, or per source index (those CV-DFS selected without it). Beside it, what the same
    other sources give without nitro's model: the best single source's true fastest variants
    (``best_single_source``, chosen in hindsight), their per-input majority (``majority``) and
    the paper's full-set SVM (``full_set_svm``, scored on at most ``HELD_OUT_SCORE_MAX`` inputs), the
    baselines the estimate compares the model with (the SVM's choices kept in ``prep`` for its next
    selection)."""
    out = {}
    if len(prep.sources) < 2:
        return out
    best = {s: prep.labels(s) for s in prep.sources}   # filled in where a source did not time an input
    sample = score_rows(len(prep.train), HELD_OUT_SCORE_MAX)
    rows = {t: prep.train[sample[prep.ran[t][sample]]] for t in prep.sources}     # scored where t timed them
    key = None if groups is None else tuple(sorted(groups.items()))
    if key not in prep.held_out_svm:    # the same for every selection of one prep: computed once
        # libsvm fits and predicts without the GIL: threads run them on every core at no cost
        prep.held_out_svm[key] = Parallel(n_jobs=n_jobs or -1, prefer="threads")(
            delayed(full_set_svm_choices)(prep.data, held_out_sources(prep, t, groups), prep.train, t, rows[t])
            for t in prep.sources)
    svm = prep.held_out_svm[key]
    for t, svm_choice in zip(prep.sources, svm):
        timed = prep.ran[t]
        pred = predict_held_out(prep, t, subsets[t] if isinstance(subsets, Mapping) else subsets, lam, groups)[timed]
        times = prep.data.times[t, prep.train[timed]]
        best_t = {s: b[timed] for s, b in best.items()}
        rest = held_out_sources(prep, t, groups)
        reached = speedup_vs_best(times)[np.arange(len(times)), pred.argmax(axis=1)]   # per input
        out[prep.data.devices[t]] = {
            "quality": float(reached.mean()),
            "quality_se": float(reached.std(ddof=1) / np.sqrt(len(reached))) if len(reached) > 1 else 0.0,
            "inputs": len(reached),
            "expected": float(np.clip(pred.max(axis=1), 0.0, 1.0).mean()),
            "best_single_source": max(fraction_of_optimum(times, best_t[s]) for s in rest),
            "majority": fraction_of_optimum(times, majority_vote(np.array([best_t[s] for s in rest]), times.shape[1])),
            "full_set_svm": fraction_of_optimum(prep.data.times[t, rows[t]], svm_choice)}
    return out


def score_rows(n: int, limit: int = SCORE_MAX, seed: int = 0) -> np.ndarray:
    """The training rows candidates are scored on: all ``n``, or ``limit`` drawn at random."""
    return np.arange(n) if n <= limit else np.sort(np.random.default_rng(seed).choice(n, limit, replace=False))


def _score_all(prep: Prepared, temp: int, candidates: list[tuple], lam: float, groups, batch: int = 32) -> np.ndarray:
    """Each candidate's fraction of the optimum on ``temp``'s training inputs (at most
    ``SCORE_MAX`` of them); ``batch`` models share one pass over the input basis."""
    rows = score_rows(len(prep.train))
    rows = rows[prep.ran[temp][rows]]             # where temp timed them
    times = prep.data.times[temp, prep.train[rows]]
    duals = held_out_duals(prep, temp, candidates, lam, groups)
    scores = []
    for i in range(0, len(duals), batch):
        P = prep.grid.predict_train_many(duals[i:i + batch], rows)
        scores += [fraction_of_optimum(times, P[:, j].argmax(axis=1)) for j in range(P.shape[1])]
    return np.array(scores)


def select_subsets(S: np.ndarray, cand: list[tuple], selection: str, k: int, n_ensemble: int) -> list[tuple]:
    """The subsets kept from the scores ``S`` (temporary targets × ``cand``): the ``n_ensemble``
    best by mean score (``"ensemble"``), or the ``k`` features most often in a temporary
    target's best subset, ties broken by the mean score of the subsets holding them
    (``"frequency"``, as one subset)."""
    mean = S.mean(axis=0)
    if selection == "ensemble":
        return [cand[j] for j in np.argsort(-mean, kind="stable")[:n_ensemble]]
    freq = Counter(c for j in S.argmax(axis=1) for c in cand[j])
    support = {c: mean[[j for j, s in enumerate(cand) if c in s]].mean() for c in freq}
    return [tuple(sorted(freq, key=lambda c: (-freq[c], -support[c]))[:k])]


def cv_dfs(prep: Prepared, candidates=None, max_size: int = 3, k: int = 1, selection: str = "ensemble",
           n_ensemble: int | None = None, ensemble_fraction: float = 0.1, lam: float = LAMBDA, n_jobs: int | None = None,
           progress: bool = True, groups: Mapping[int, str] | None = None) -> CVDFSResult:
    """Select device features for a target from ``prep.sources`` (see module docstring).
    ``groups`` (source index → family): each temporary target is then predicted without the
    sources of its family (use it when the real target's family is not among the sources)."""
    start = time.perf_counter()
    data = prep.data
    if len(prep.sources) < MIN_SOURCES:
        raise ValueError(f"CV-DFS needs at least {MIN_SOURCES} source devices, got {len(prep.sources)} "
                         f"({', '.join(data.devices[s] for s in prep.sources)}): record more sources, "
                         "or build the model on every device feature (search_based_dfs off, no --cv-dfs)")
    if selection not in ("ensemble", "frequency"):
        raise ValueError(f"selection must be 'ensemble' or 'frequency', not {selection!r}")
    names = list(candidates) if candidates is not None else [data.device_features[j] for j in prep.features]
    unknown = [n for n in names if n not in data.device_features]
    if unknown:
        raise ValueError(f"unknown device features {unknown}; known: {data.device_features}")
    cols = [data.device_features.index(n) for n in names if data.device_features.index(n) in prep.features]
    if not cols:
        raise ValueError("no candidate device feature is known on every device involved")
    # a feature constant over the sources cannot show its effect (the device kernel leaves it
    # out): a subset with it is the subset without it, counted twice
    cols = varying_columns(prep.D, prep.sources, cols) or cols[:1]
    cand = subsets_upto(cols, min(max_size, len(cols)))
    # the scores do not depend on the selection: a second search of the same prep reads them back
    key = (tuple(cand), lam, None if groups is None else tuple(sorted(groups.items())))
    if key not in prep.searched:
        jobs = (delayed(_score_all)(prep, t, cand, lam, groups) for t in prep.sources)
        streams = getattr(get_active_backend()[0], "supports_return_generator", False)   # Ray's does not
        rows = list(progress_bar(Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator" if streams else "list")(jobs),
                                 total=len(prep.sources), desc="CV-DFS", unit="source", enabled=progress))
        prep.searched[key] = np.array(rows)         # (temporary targets, subsets)
    S = prep.searched[key]
    best = S.argmax(axis=1)                         # first best: the smallest subset on ties
    freq = Counter(c for j in best for c in cand[j])
    n_ensemble = n_ensemble or max(1, int(np.ceil(ensemble_fraction * len(cand))))
    used = select_subsets(S, cand, selection, k, n_ensemble)
    # each source is held out from the selection too: the subsets its quality is measured with
    # are chosen on the scores of the sources its model is fitted on
    row_of = {t: i for i, t in enumerate(prep.sources)}
    nested = {t: select_subsets(S[[row_of[s] for s in held_out_sources(prep, t, groups)]], cand, selection, k,
                                n_ensemble) for t in prep.sources}
    kept = sorted({c for s in used for c in s})
    held_out = held_out_results(prep, nested, lam, groups, n_jobs)
    return CVDFSResult(
        features=[data.device_features[c] for c in kept],
        subsets=[[data.device_features[c] for c in s] for s in used],
        frequencies={data.device_features[c]: n for c, n in freq.items()},
        best_subsets={data.devices[t]: [data.device_features[c] for c in cand[j]] for t, j in zip(prep.sources, best)},
        scores={data.devices[t]: float(S[i, j]) for i, (t, j) in enumerate(zip(prep.sources, best))},
        models_trained=S.size, held_out=held_out,
        seconds=time.perf_counter() - start,
        settings={"max_size": max_size, "k": k, "selection": selection,
                  "n_ensemble": n_ensemble if selection == "ensemble" else None,
                  "lambda": lam, "candidates": len(cols), "grouped": groups is not None})
