"""The paper's full-set SVM, a choice a user can make without nitro's transfer model: one RBF
SVM on every source's rows ``[input features ∘ device features]`` labelled with that source's
fastest variant. ``nitro evaluate`` scores it beside the default model, and the zero-shot
estimate compares the model with it on held-out sources, so that it can say where it may
fall below it."""
from __future__ import annotations

import numpy as np

from ..learn import SVMSelector
from ..learn.kron import signed_log, varying_columns
from ..memo import content_key, recall
from .data import TransferData, concatenate, stack_sources

# Exact up to this many stacked rows (a reference, not a shipped model, so it may hold more
# support vectors than SVMSelector's default, and is not bounded by the dispatch budget).
FULL_SET_MAX_FIT = 10000
# Inputs a held-out source scores it on (a random sample beyond): predicting 20,000 inputs with
# thousands of support vectors took 3.7 s a source on 100,000 synthetic inputs; on 2,000 the
# standard error of a mean fraction of the optimum is still about 0.3 point.
HELD_OUT_SCORE_MAX = 2000
# Fitted full-set SVMs kept, by their training rows' content, within :func:`nitro.memo.kept`:
# leaving one device out, the SVM of held-out source s for target t is the one of t for s;
# 16 devices refitted them 496 times, half of the run. Outside it (tune_from_source fits each
# once) nothing is kept.
FIT_CACHE = 128


def full_set_svm_choices(data: TransferData, sources: list[int], inputs: np.ndarray, target: int,
                         eval_inputs: np.ndarray) -> np.ndarray:
    """Variant indices the full-set SVM, fitted on ``sources``' rows of ``inputs``, chooses for
    ``target`` on ``eval_inputs``; every device feature known on the sources and the target and
    varying over the sources is used (signed log, as the kernel models see them)."""
    D = signed_log(data.D)
    feats = [j for j in range(len(data.device_features)) if np.isfinite(data.D[list(sources) + [target], j]).all()]
    feats = varying_columns(D, list(sources), feats)
    X, y, _ = stack_sources(data, sources, inputs, feats)
    return _fitted(X, y).predict(concatenate(data.X[eval_inputs], data.D[target, feats]))


def _fitted(X: np.ndarray, y: np.ndarray) -> SVMSelector:
    """The full-set SVM fitted on ``(X, y)``, the one kept when these rows were fitted before
    within :func:`nitro.memo.kept` (the fit is deterministic: a kept one is the one a refit would give)."""
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    return recall("full_set_svm", content_key(X, y), lambda: SVMSelector(
        C_grid=(1.0,), gamma_grid=("scale",), max_fit=FULL_SET_MAX_FIT, max_support_vectors=None).fit(X, y), FIT_CACHE)
