"""The dispatch budget of exported RBF models (kinds ``svc`` and ``kernel``), and the
least-squares re-expression that keeps a fitted model within it.

One compiled call (nitro/selector_eval.hpp) costs, per centre, a squared distance over the
features and one exp with the read-out; measured on a 2-core VM (AMD EPYC, AVX2): about
0.15 ns per centre and feature and 2.4 ns per centre for the exp and a read-out of ~6
variants, i.e. the time of ``centres × (features + PER_CENTRE)`` distance terms, plus ~0.5 µs
of call overhead. Learners keep their exported models within ``DISPATCH_BUDGET`` such terms
(about 3.5 µs per call there, under the 5 µs goal with room for a loaded machine): 714
centres with 12 features, 540 with 21, 281 with 55. ``nitro bench dispatch`` measures it.

A model fitted with more centres is not refitted on fewer inputs (on the SpMV data that cost
the on-device SVM up to 0.45 points on a GPU): its function is re-expressed on a sample of its
centres, with the weights that reproduce it best on the training inputs
(:func:`reexpression_weights`; within 0.3 points of the unbounded models there).
"""
from __future__ import annotations

import numbers

import numpy as np

DISPATCH_BUDGET = 20_000   # distance terms per call: centres × (features + PER_CENTRE)
PER_CENTRE = 16            # an exp and the read-out cost about as much as 16 features
RIDGE = 1e-6               # ridge of a re-expression, per training input


def max_centres(n_features: int, budget: int = DISPATCH_BUDGET) -> int:
    """The most centres (or support vectors) of ``n_features`` that fit ``budget``."""
    return max(1, int(budget) // (int(n_features) + PER_CENTRE))


def resolve_max_centres(value, n_features: int) -> int | None:
    """A learner's ``max_centres`` setting as a bound: ``"auto"`` the dispatch budget's
    (:func:`max_centres`), ``None`` unbounded, a positive int itself."""
    if isinstance(value, str) and value == "auto":
        return max_centres(n_features)
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1:
        return int(value)
    raise ValueError(f"max_centres must be 'auto', None or a positive int, not {value!r}")


def reexpression_weights(G: np.ndarray, B: np.ndarray, K_cc: np.ndarray, n_rows: int) -> np.ndarray:
    """Weights ``W`` (m, t) of an expansion over m centres that reproduces t functions on
    ``n_rows`` training inputs best: ``min ‖K W − F‖² + δ·n_rows·tr(Wᵀ K_cc W)`` from
    ``G = KᵀK`` and ``B = KᵀF`` (K: the inputs' kernel values against the centres), with the
    small ridge ``δ = RIDGE`` in the kernel's own norm; directions that near-duplicate centres
    leave undetermined are dropped rather than given huge opposite weights."""
    s, Q = np.linalg.eigh(G + RIDGE * n_rows * K_cc)
    keep = s > 1e-12 * s.max()
    return Q[:, keep] @ ((Q[:, keep].T @ B) / s[keep, None])
