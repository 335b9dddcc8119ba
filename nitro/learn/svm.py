"""Nitro's default learner: scaling + RBF SVM classifier with cross-validated C and γ."""
from __future__ import annotations

import warnings

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score, make_scorer
from sklearn.model_selection import GridSearchCV, RepeatedStratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.multiclass import unique_labels
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .preprocessing import LogHeavyTails


class SVMSelector(ClassifierMixin, BaseEstimator):
    """Predicts the best variant for a feature vector, as Nitro did with libSVM.

    ``C`` and ``gamma`` are chosen by grid search over stratified k-fold splits (``cv`` folds,
    fewer when a class has fewer members, repeated ``cv_repeats`` times with other shuffles: with
    a few dozen inputs one split's score is noisy enough to pick a degenerate model); with a
    single class in the labels the selector always predicts it. ``sample_weight`` may weigh
    inputs by how costly a wrong choice is; it weighs the cross-validation score too.
    """

    def __init__(self, C_grid=(0.1, 1.0, 10.0, 100.0, 1000.0), gamma_grid=("scale", 0.01, 0.1, 1.0),
                 cv=5, cv_repeats=3, log_ratio=100.0, class_weight=None, n_jobs=None):
        self.C_grid = C_grid
        self.gamma_grid = gamma_grid
        self.cv = cv
        self.cv_repeats = cv_repeats
        self.log_ratio = log_ratio
        self.class_weight = class_weight
        self.n_jobs = n_jobs

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
        _, counts = np.unique(y, return_counts=True)
        folds = min(self.cv, int(counts.min()))
        if folds >= 2 and len(self.C_grid) * len(self.gamma_grid) > 1:
            self.pipeline_, self.best_params_ = self._search(X, y, sample_weight, folds)
        else:
            C, gamma = self.C_grid[len(self.C_grid) // 2], self.gamma_grid[0]
            self.best_params_ = {"svc__C": C, "svc__gamma": gamma}
            fit_params = {} if sample_weight is None else {"svc__sample_weight": sample_weight}
            self.pipeline_ = self._pipeline(C, gamma).fit(X, y, **fit_params)
        return self

    def _search(self, X, y, sample_weight, folds):
        """Grid search of C and gamma. The weights go to the SVM *and* to the CV score: the
        held-out inputs are scored by weighted accuracy, so a grid point is judged by the
        same cost of a wrong choice that the SVM is fitted to (plain accuracy would count a
        near-tie, whose label is timing noise, as much as a choice that fails)."""
        grid = {"svc__C": list(self.C_grid), "svc__gamma": list(self.gamma_grid)}
        cv = RepeatedStratifiedKFold(n_splits=folds, n_repeats=self.cv_repeats, random_state=0)
        with warnings.catch_warnings(), config_context(enable_metadata_routing=sample_weight is not None):
            warnings.simplefilter("ignore")
            if sample_weight is None:
                search = GridSearchCV(self._pipeline(), grid, n_jobs=self.n_jobs, cv=cv).fit(X, y)
            else:
                pipeline = self._pipeline()
                pipeline[-2].set_fit_request(sample_weight=False)     # the scaler: unweighted
                pipeline[-1].set_fit_request(sample_weight=True)
                scorer = make_scorer(accuracy_score).set_score_request(sample_weight=True)
                search = GridSearchCV(pipeline, grid, scoring=scorer, n_jobs=self.n_jobs, cv=cv)
                search.fit(X, y, sample_weight=sample_weight)
        return search.best_estimator_, search.best_params_

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
