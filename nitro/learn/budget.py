"""The dispatch budget of exported RBF models (kinds ``svc`` and ``kernel``), and the
least-squares re-expression that keeps a fitted model within it.

One compiled call (``predict_one``, nitro/selector_eval.hpp) costs, measured on the 2-core
AMD EPYC VM (AVX2): ~0.13 ns per centre and feature (a squared distance term), ~2 ns per
centre (its exp and a read-out of ~6 variants: ``PER_CENTRE`` terms) and ~11 ns per feature
(reading, log-scaling and standardising it: ``PER_FEATURE`` terms, rounded down). Learners keep
``centres × (features + PER_CENTRE) + PER_FEATURE × features`` within ``DISPATCH_BUDGET``
terms, about 3 µs per call at best there (the VM's clock varies by half from second to
second; medians over 100-call batches stay under the 5 µs goal): 686 centres with 12
features, 504 with 21, 232 with 55, never fewer than ``MIN_CENTRES``. ``nitro bench
dispatch`` times models of these sizes.

A model fitted with more centres is not refitted on fewer inputs (on the SpMV data that cost
the on-device SVM up to 0.45 points on a GPU): its function is re-expressed on some of its
centres (those a pivoted Cholesky decomposition picks, :func:`nitro.learn.kron.pivoted_landmarks`)
with the weights that reproduce it best on the training inputs (:func:`reexpression_weights`).
"""
from __future__ import annotations

import numbers

import numpy as np

DISPATCH_BUDGET = 20_000   # distance terms per call
PER_CENTRE = 16            # an exp and the read-out cost about as much as 16 features' terms
PER_FEATURE = 64           # reading and scaling a feature, once per call
MIN_CENTRES = 32           # with hundreds of features, reading them is most of the call
RIDGE = 1e-6               # ridge of a re-expression, per training input


def max_centres(n_features: int, budget: int = DISPATCH_BUDGET) -> int:
    """The most centres (or support vectors) of ``n_features`` that fit ``budget``."""
    d = int(n_features)
    return max(MIN_CENTRES, (int(budget) - PER_FEATURE * d) // (d + PER_CENTRE))


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
