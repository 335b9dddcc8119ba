"""Nitro's default learner: scaling + RBF SVM classifier with cross-validated C and γ."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score, make_scorer
from sklearn.experimental import enable_halving_search_cv  # noqa: F401 (enables the import below)
from sklearn.model_selection import GridSearchCV, HalvingGridSearchCV, RepeatedStratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.multiclass import unique_labels
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .budget import reexpression_weights, resolve_max_centres
from .kron import pivoted_landmarks, rbf
from .preprocessing import LogHeavyTails

PARALLEL_MIN = 500     # search inputs from which the grid's fits go to every core
HALVING_MIN = 1500     # search inputs from which the grid is searched by successive halving


class SVMSelector(ClassifierMixin, BaseEstimator):
    """Predicts the best variant for a feature vector, as Nitro did with libSVM.

    ``C`` and ``gamma`` are chosen by grid search over stratified k-fold splits (``cv`` folds,
    fewer when a class has fewer members, repeated ``cv_repeats`` times with other shuffles: with
    a few dozen inputs one split's score is noisy enough to pick a degenerate model); with a
    single class in the labels the selector always predicts it. ``sample_weight`` may weigh
    inputs by how costly a wrong choice is; it weighs the cross-validation score too.

    Large training sets: an RBF SVM costs about n² to fit and keeps a share of its n inputs
    as support vectors, so the search runs on a class-stratified sample of at most
    ``max_search`` inputs and the final fit on at most ``max_fit`` (``None``: all). Below
    those sizes nothing changes; above, fitting time and model size stop growing with n.
    The search's fits run on every core when it has at least ``PARALLEL_MIN`` inputs
    (``n_jobs=None``; set ``n_jobs`` to force), where that outweighs starting workers.

    Dispatch time: a compiled call costs about one exp and a distance per support vector, so
    the fitted SVM keeps at most ``max_support_vectors`` of them (``"auto"``: the dispatch
    budget of :mod:`nitro.learn.budget`, 686 with 12 features, 504 with 21; ``None``:
    unbounded). One with more is re-expressed on that many (:func:`reduce_support_vectors`);
    ``n_support_fitted_`` is the count before.
    """

    def __init__(self, C_grid=(0.1, 1.0, 10.0, 100.0, 1000.0), gamma_grid=("scale", 0.01, 0.1, 1.0),
                 cv=5, cv_repeats=3, log_ratio=100.0, class_weight=None, n_jobs=None,
                 max_search=2000, max_fit=4000, max_support_vectors="auto", random_state=0):
        self.C_grid = C_grid
        self.gamma_grid = gamma_grid
        self.cv = cv
        self.cv_repeats = cv_repeats
        self.log_ratio = log_ratio
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.max_search = max_search
        self.max_fit = max_fit
        self.max_support_vectors = max_support_vectors
        self.random_state = random_state

    def _pipeline(self, C=1.0, gamma="scale"):
        return make_pipeline(LogHeavyTails(self.log_ratio), StandardScaler(),
                             SVC(C=C, gamma=gamma, kernel="rbf", class_weight=self.class_weight))

    def fit(self, X, y, sample_weight=None):
        X, y = validate_data(self, X, y, dtype=np.float64)
        self.classes_ = unique_labels(y)
        if len(self.classes_) == 1:
            self.pipeline_ = None
            return self
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X)
        search = stratified_sample(y, self.max_search, self.random_state)
        _, counts = np.unique(y[search], return_counts=True)
        folds = min(self.cv, int(counts.min()))
        if folds >= 2 and len(self.C_grid) * len(self.gamma_grid) > 1:
            sw = None if sample_weight is None else sample_weight[search]
            self.best_params_ = self._search(X[search], y[search], sw, folds)
        else:
            self.best_params_ = {"svc__C": self.C_grid[len(self.C_grid) // 2], "svc__gamma": self.gamma_grid[0]}
        fit = stratified_sample(y, self.max_fit, self.random_state)
        fit_params = {} if sample_weight is None else {"svc__sample_weight": sample_weight[fit]}
        self.n_fit_inputs_ = len(fit)
        self.pipeline_ = self._pipeline(self.best_params_["svc__C"], self.best_params_["svc__gamma"])
        self.pipeline_.fit(X[fit], y[fit], **fit_params)
        svc = self.pipeline_[-1]
        self.n_support_fitted_ = len(svc.support_)
        bound = resolve_max_centres(self.max_support_vectors, X.shape[1])
        if bound is not None and self.n_support_fitted_ > bound:
            reduce_support_vectors(svc, self.pipeline_[:-1].transform(X[fit]), bound)
        return self

    def _search(self, X, y, sample_weight, folds):
        """Grid search of C and gamma. The weights go to the SVM *and* to the CV score: the
        held-out inputs are scored by weighted accuracy, so a grid point is judged by the
        same cost of a wrong choice that the SVM is fitted to (plain accuracy would count a
        near-tie, whose label is timing noise, as much as a choice that fails).

        From ``HALVING_MIN`` inputs the search is successive halving (scikit-learn's
        ``HalvingGridSearchCV``: every grid point on a third of the inputs, the best third on
        all of them): the grid's cost falls about fivefold where one fit is already costly."""
        grid = {"svc__C": list(self.C_grid), "svc__gamma": list(self.gamma_grid)}
        n_jobs = self.n_jobs if self.n_jobs is not None else (-1 if len(y) >= PARALLEL_MIN else None)
        halving = len(y) >= HALVING_MIN
        cv = RepeatedStratifiedKFold(n_splits=folds, n_repeats=1 if halving else self.cv_repeats, random_state=0)
        with warnings.catch_warnings(), config_context(enable_metadata_routing=sample_weight is not None):
            warnings.simplefilter("ignore")
            pipeline, scoring, params = self._pipeline(), None, {}
            if sample_weight is not None:
                pipeline[-2].set_fit_request(sample_weight=False)     # the scaler: unweighted
                pipeline[-1].set_fit_request(sample_weight=True)
                scoring = make_scorer(accuracy_score).set_score_request(sample_weight=True)
                params = {"sample_weight": sample_weight}
            if halving:
                search = HalvingGridSearchCV(pipeline, grid, factor=3, min_resources=len(y) // 3, scoring=scoring,
                                             n_jobs=n_jobs, cv=cv, refit=False, random_state=0)
            else:
                search = GridSearchCV(pipeline, grid, scoring=scoring, n_jobs=n_jobs, cv=cv, refit=False)
            search.fit(X, y, **params)
        return search.best_params_

    def decision_function(self, X):
        """The SVM's one-versus-rest decision scores (used to find uncertain inputs)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self.pipeline_ is None:
            return np.zeros(X.shape[0])
        return self.pipeline_.decision_function(X)

    def predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if self.pipeline_ is None:
            return np.full(X.shape[0], self.classes_[0])
        return self.pipeline_.predict(X)


def stratified_sample(y: np.ndarray, limit: int | None, seed: int = 0) -> np.ndarray:
    """Sorted indices of at most ``limit`` rows (all when ``limit`` is ``None`` or not less
    than ``len(y)``), drawn at random within each class in proportion to its size, and at
    least ``min(count, 5)`` of every class, so that a rare best variant is still learnt."""
    n = len(y)
    if limit is None or n <= limit:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    take = np.maximum(np.floor(counts * limit / n).astype(int), np.minimum(counts, 5))
    picked = [rng.choice(np.flatnonzero(inverse == c), size=k, replace=False) for c, k in enumerate(take)]
    return np.sort(np.concatenate(picked))


def reduce_support_vectors(svc: SVC, Z: np.ndarray, bound: int, chunk: int = 2048) -> SVC:
    """Re-express a fitted multi-class RBF ``svc`` on at most ``bound`` of its support vectors,
    in place (scikit-learn's libsvm arrays: its ``predict`` and the exported model both use them).

    A class keeps a share of its support vectors in proportion to their count (at least one),
    chosen by :func:`nitro.learn.kron.pivoted_landmarks`. Each pair of classes keeps its
    intercept and gets the coefficients, over its two classes' kept vectors, that reproduce its
    decision values on the training inputs ``Z`` (transformed as the SVC sees them) best
    (:func:`nitro.learn.budget.reexpression_weights`). The one-versus-one layout allows exactly
    that: a vector of class i has one coefficient for each other class j, used by pair (i, j)."""
    sv, coef, gamma = svc.support_vectors_, svc._dual_coef_, svc._gamma
    n_sup = np.asarray(svc._n_support, dtype=int)
    k, start = len(n_sup), np.concatenate([[0], np.cumsum(n_sup)])
    take = np.maximum(n_sup * bound // start[-1], np.minimum(n_sup, 1))
    while take.sum() > bound and take.max() > 1:
        take[np.argmax(take)] -= 1
    picked = [start[c] + pivoted_landmarks(sv[start[c]:start[c + 1]], take[c], gamma) for c in range(k)]
    take = np.array([len(p) for p in picked])      # fewer where a class repeats vectors
    kept = np.concatenate(picked)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    W = np.zeros((start[-1], len(pairs)))          # each pair's coefficients over all vectors
    for q, (i, j) in enumerate(pairs):
        W[start[i]:start[i + 1], q] = coef[j - 1, start[i]:start[i + 1]]
        W[start[j]:start[j + 1], q] = coef[i, start[j]:start[j + 1]]
    G = np.zeros((len(kept), len(kept)))
    B = np.zeros((len(kept), len(pairs)))
    for r in range(0, len(Z), chunk):
        K = rbf(Z[r:r + chunk], sv, gamma)
        G += K[:, kept].T @ K[:, kept]
        B += K[:, kept].T @ (K @ W)
    K_cc = rbf(sv[kept], sv[kept], gamma)
    new_start = np.concatenate([[0], np.cumsum(take)])
    new_coef = np.zeros((k - 1, len(kept)))
    for q, (i, j) in enumerate(pairs):
        cols = np.r_[new_start[i]:new_start[i + 1], new_start[j]:new_start[j + 1]]
        w = reexpression_weights(G[np.ix_(cols, cols)], B[cols, q:q + 1], K_cc[np.ix_(cols, cols)], len(Z))[:, 0]
        new_coef[j - 1, new_start[i]:new_start[i + 1]] = w[:take[i]]
        new_coef[i, new_start[j]:new_start[j + 1]] = w[take[i]:]
    svc.support_ = np.ascontiguousarray(svc.support_[kept])
    svc.support_vectors_ = np.ascontiguousarray(sv[kept])
    svc._n_support = take.astype(svc._n_support.dtype)
    svc._dual_coef_ = new_coef
    svc.dual_coef_ = -new_coef if k == 2 else new_coef      # scikit-learn flips the binary case
    return svc
