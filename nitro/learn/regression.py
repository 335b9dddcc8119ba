"""Bergstra et al.'s predictive auto-tuning: gradient-boosted regression trees predict each
variant's log speed-up, and the choice is the argmax — search on the model, not the hardware.

One model over rows ``[x ∘ code(variant)]``, where ``x`` is the input's features (with
device features appended for cross-device use) and ``code`` is the variant's one-hot identity
or, for parameterised variants, its configuration parameters. The target is
``log(t_ref / t_v)``, the log speed-up over the input's reference time (the median of its
valid times, so that large and small inputs weigh alike); a variant that failed or was not
allowed gets the paper's constant ``ζ`` below that (``zeta``, default ``log 0.5``, the best
value in the paper), placed under the slowest valid variant so it is never preferred.

For many configurations (``variant_codes`` given), :meth:`RegressionSelector.search`
hill-climbs over a parameter grid on the model, and :meth:`RegressionSelector.search_and_run`
falls back to the next-best configuration when a chosen one fails at run time.
"""
from __future__ import annotations

import itertools
import math
from typing import Callable, Mapping, Sequence

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from .base import TimeSelector


class UnweightedBinning(HistGradientBoostingRegressor):
    """scikit-learn's booster with its bin edges from unweighted quantiles (as before
    scikit-learn 1.6); the weights still weigh every gradient. A weighted fit in scikit-learn
    ≥ 1.6 finds each feature's 255 edges by 254 separate weighted percentiles, each a sort: a
    50-tree fit on 7,500 rows of 30 features took 2.6 s instead of 0.13 s. nitro's weights
    balance the target's few rows against the sources' many rows of the same inputs, so the
    edges barely move (``benchmarks/README.md``, "Weighted boosted-tree fits")."""

    def _bin_data(self, X, sample_weight, is_training_data):
        return super()._bin_data(X, None, is_training_data)


class RegressionSelector(TimeSelector):
    """Gradient-boosted trees over ``[x ∘ code(variant)]`` predicting log speed-up; argmax.

    The booster is scikit-learn's histogram gradient boosting (``max_iter`` trees of at most
    ``max_leaf_nodes`` leaves, no early stopping, so fits are deterministic).
    ``variant_codes``: optional ``(n_variants, q)`` configuration parameters of the variants
    (default: one-hot identity). ``n_threads`` OpenMP threads fit and predict (default 1: on a
    busy machine OpenMP's spin-waiting made multi-threaded fits ~50× slower).
    ``min_samples_leaf`` defaults to scikit-learn's 20 rows, fewer on small training sets
    (one per 50 rows, at least 1) so that a few inputs can still separate the variants.
    ``per_variant``: one booster per variant over ``x`` alone (one-hot identity only), each
    free to split where its own variant changes; exported as the same ``gbt`` kind, its trees
    grouped by variant (``variant_trees``), so a dispatch walks each booster once.
    """

    def __init__(self, max_iter: int = 200, max_leaf_nodes: int = 31, min_samples_leaf: int | None = None,
                 learning_rate: float = 0.1, zeta: float = math.log(0.5), variant_codes=None, random_state: int = 0,
                 n_threads: int | None = 1, per_variant: bool = False):
        self.max_iter = max_iter
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.learning_rate = learning_rate
        self.zeta = zeta
        self.variant_codes = variant_codes
        self.random_state = random_state
        self.n_threads = n_threads
        self.per_variant = per_variant

    def _codes(self, k: int) -> np.ndarray:
        if self.variant_codes is None:
            return np.eye(k)
        codes = np.asarray(self.variant_codes, dtype=np.float64)
        if codes.ndim != 2 or codes.shape[0] != k or not np.isfinite(codes).all():
            raise ValueError(f"variant_codes must be a finite ({k}, q) matrix, got shape {codes.shape}")
        return codes

    @staticmethod
    def _rows(X: np.ndarray, codes: np.ndarray) -> np.ndarray:
        n, k = X.shape[0], codes.shape[0]
        return np.hstack([np.repeat(X, k, axis=0), np.tile(codes, (n, 1))])

    def targets(self, times: np.ndarray) -> np.ndarray:
        """``log(t_ref / t)`` per input and variant, ``ζ`` below the slowest valid one for failures;
        ``t_ref`` the median of the input's valid times, or for ``per_variant`` boosters its
        best time (each booster learns how far its variant is from the best: in few-shot
        transfer on the SpMV data, leave-one-GPU-out, 97.25% of the optimum against 96.97 with
        the median on 6 GPUs with 2% of the inputs timed, 96.71 against 96.12 on 7 with 1%)."""
        logt = np.log(times)
        ref = np.nanmin(logt, axis=1, keepdims=True) if self.per_variant else np.nanmedian(logt, axis=1, keepdims=True)
        y = ref - logt
        floor = np.minimum(np.nanmin(y, axis=1, keepdims=True), 0.0) + self.zeta
        return np.where(np.isnan(y), floor, y)

    def fit(self, X, times, sample_weight=None):
        """``sample_weight``: one weight per input (row of ``X``), shared by its variants' rows,
        or one per input and variant (``(n, v)``). A zero weight leaves that variant's entry
        out, which is how rows that timed only some variants are given (refining mode): a NaN
        time alone counts as a failure, and the reference time is the best of those timed."""
        X, times = self._start_fit(X, times)
        n, k = times.shape
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape not in ((n,), (n, k)) or not (np.isfinite(sample_weight).all()
                                                               and (sample_weight >= 0).all()):
                raise ValueError(f"sample_weight must be {n} or {n}×{k} finite non-negative numbers")
            if sample_weight.ndim == 1:
                sample_weight = np.repeat(sample_weight[:, None], k, axis=1)
        self.codes_ = self._codes(k)
        if self.per_variant and self.variant_codes is not None:
            raise ValueError("per_variant fits one booster per variant identity: it takes no variant_codes")
        y = self.targets(times)
        with threadpool_limits(self.n_threads, user_api="openmp"):
            if self.per_variant:
                self.boosters_ = [self._fit_booster(X, y[:, v], None if sample_weight is None else sample_weight[:, v])
                                  for v in range(k)]
            else:
                weight = None if sample_weight is None else sample_weight.ravel()
                self.gbr_ = self._fit_booster(self._rows(X, self.codes_), y.ravel(), weight)
        return self

    def _fit_booster(self, X, y, weight):
        """One booster on the rows of non-zero ``weight`` (all when ``None``)."""
        if weight is not None:
            keep = weight > 0
            if not keep.any():
                raise ValueError("a variant has no row with a positive weight to learn from")
            X, y, weight = X[keep], y[keep], weight[keep]
        return self._booster(X.shape[0]).fit(X, y, sample_weight=weight)

    def _booster(self, rows: int) -> HistGradientBoostingRegressor:
        leaf = self.min_samples_leaf if self.min_samples_leaf is not None else min(20, max(1, rows // 50))
        return UnweightedBinning(max_iter=self.max_iter, max_leaf_nodes=self.max_leaf_nodes,
                                 min_samples_leaf=leaf, learning_rate=self.learning_rate,
                                 early_stopping=False, random_state=self.random_state)

    def predict_scores(self, X, codes=None) -> np.ndarray:
        """Predicted log speed-up (n_inputs, n_codes) of each variant (or of ``codes``) over the
        input's reference time (see :meth:`targets`)."""
        X = self._check_X(X)
        if self.per_variant:
            if codes is not None:
                raise ValueError("a per_variant model scores its own variants only")
            with threadpool_limits(self.n_threads, user_api="openmp"):
                return np.column_stack([b.predict(X) for b in self.boosters_])
        codes = self.codes_ if codes is None else np.atleast_2d(np.asarray(codes, dtype=np.float64))
        with threadpool_limits(self.n_threads, user_api="openmp"):
            return self.gbr_.predict(self._rows(X, codes)).reshape(X.shape[0], codes.shape[0])

    def predict(self, X):
        return self.predict_scores(X).argmax(axis=1)

    def export(self):
        """The ``"gbt"`` model kind. The trees are read from the fitted booster's predictor
        arrays (leaf values already include the learning rate, so it is exported as 1.0;
        thresholds compare float64 inputs, hence ``x_float32: False``)."""
        if self.per_variant:
            return "gbt", self._export_per_variant()
        trees = [_tree(predictor) for (predictor,) in self.gbr_._predictors]
        return "gbt", {"trees": trees, "learning_rate": 1.0,
                       "init": float(np.ravel(self.gbr_._baseline_prediction)[0]),
                       "variant_codes": self.codes_.tolist(), "x_float32": False}

    def _export_per_variant(self) -> dict:
        """Every booster's trees in turn, each led by a one-leaf tree holding its baseline;
        ``variant_trees`` tells dispatch which trees score which variant."""
        leaf = {"children_left": [-1], "children_right": [-1], "feature": [-1], "threshold": [0.0]}
        trees, counts = [], []
        for booster in self.boosters_:
            trees.append({**leaf, "value": [float(np.ravel(booster._baseline_prediction)[0])]})
            trees.extend(_tree(predictor) for (predictor,) in booster._predictors)
            counts.append(1 + len(booster._predictors))
        return {"trees": trees, "learning_rate": 1.0, "init": 0.0, "variant_codes": self.codes_.tolist(),
                "x_float32": False, "variant_trees": counts}

    # -- search on the model (parameterised variants) -------------------------------------------
    def search(self, x, space: Mapping[str, Sequence[float]], start: Mapping[str, float] | None = None,
               exclude=()) -> dict[str, float]:
        """Hill-climb over the grid ``space`` (parameter → ordered values, in the order of the
        columns of ``variant_codes``) on the model's predicted speed-up for input ``x``: from
        ``start`` (default: the best of a coarse pass over every parameter's ends and middle),
        move to the best neighbour (one parameter one step along its grid) until none is
        better. Configurations in ``exclude`` (tuples of values) are never returned."""
        names = list(space)
        grids = [list(space[n]) for n in names]
        if self.codes_.shape[1] != len(names):
            raise ValueError(f"space has {len(names)} parameters, the model's codes have {self.codes_.shape[1]}")
        excluded = {tuple(float(v) for v in c) for c in exclude}
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))

        def score(cands):
            cands = [c for c in cands if tuple(float(g[i]) for g, i in zip(grids, c)) not in excluded]
            if not cands:
                return None, -np.inf
            s = self.predict_scores(x, [[g[i] for g, i in zip(grids, c)] for c in cands])[0]
            j = int(s.argmax())
            return cands[j], s[j]

        if start is not None:
            cur = tuple(grids[j].index(start[n]) for j, n in enumerate(names))
            best = score([cur])
        else:
            coarse = itertools.product(*[sorted({0, len(g) // 2, len(g) - 1}) for g in grids])
            best = score(list(coarse))
        cur, cur_score = best
        if cur is None:
            raise LookupError("every configuration of the coarse pass is excluded")
        while True:
            nbrs = [cur[:j] + (cur[j] + s,) + cur[j + 1:] for j in range(len(grids)) for s in (-1, 1)
                    if 0 <= cur[j] + s < len(grids[j])]
            cand, cand_score = score(nbrs)
            if cand is None or cand_score <= cur_score:
                return {n: g[i] for n, g, i in zip(names, grids, cur)}
            cur, cur_score = cand, cand_score

    def search_and_run(self, x, space, run: Callable[[dict], object], max_tries: int = 5):
        """Run the configuration :meth:`search` picks; when ``run`` raises, exclude that
        configuration and search again (up to ``max_tries``). Returns ``(config, result)``."""
        failed, errors = [], []
        for _ in range(max_tries):
            config = self.search(x, space, exclude=failed)
            try:
                return config, run(config)
            except Exception as exc:  # a failing configuration falls back to the next best
                failed.append(tuple(float(v) for v in config.values()))
                errors.append(f"{config}: {type(exc).__name__}: {exc}")
        raise RuntimeError(f"{max_tries} configurations failed: " + "; ".join(errors))


def _tree(predictor) -> dict:
    """One fitted scikit-learn predictor as the ``gbt`` kind's node lists (leaf values already
    include the learning rate)."""
    nodes = predictor.nodes
    leaf = nodes["is_leaf"].astype(bool)
    return {"children_left": np.where(leaf, -1, nodes["left"].astype(np.int64)).tolist(),
            "children_right": np.where(leaf, -1, nodes["right"].astype(np.int64)).tolist(),
            "feature": np.where(leaf, -1, nodes["feature_idx"].astype(np.int64)).tolist(),
            "threshold": np.where(leaf, 0.0, nodes["num_threshold"]).tolist(),
            "value": nodes["value"].astype(np.float64).tolist()}

