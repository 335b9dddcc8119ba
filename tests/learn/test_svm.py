import numpy as np
import pytest

from nitro.learn import LogHeavyTails, SVMSelector
from nitro.learn.budget import max_centres
from nitro.learn.svm import stratified_sample
from nitro.model import SelectorModel


def test_log_only_heavy_tailed_nonnegative_columns():
    X = np.array([[1.0, -1.0, 0.5], [1e6, 2.0, 0.7], [10.0, 3.0, 0.9]])
    t = LogHeavyTails().fit(X)
    assert t.log_mask_.tolist() == [True, False, False]
    assert np.allclose(t.transform(X)[:, 0], np.log1p(X[:, 0]))


def test_values_near_the_largest_double_are_logged_or_named():
    """A narrow column near 1e308 is logged (a scaler would square it to inf and the SVM see
    NaN); a column of such values that also holds negatives is refused, naming its index."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(1.0, 1.7, 60) * 1e308, rng.uniform(0, 1, 60)])
    y = np.where(X[:, 1] < 0.5, "a", "b")
    est = SVMSelector().fit(X, y)
    assert est.pipeline_[0].log_mask_.tolist() == [True, False]
    assert (est.predict(X) == y).mean() >= 0.9
    X[0, 0] = -1e308
    with pytest.raises(ValueError, match="column 0 has values as large as 1.7e\\+308"):
        LogHeavyTails().fit(X)


def test_learns_a_size_threshold_across_orders_of_magnitude():
    sizes = np.logspace(3, 7, 80)
    y = np.where(sizes < 1e5, "small", "large")
    est = SVMSelector().fit(sizes[:, None], y)
    test = np.logspace(3.1, 6.9, 50)
    acc = (est.predict(test[:, None]) == np.where(test < 1e5, "small", "large")).mean()
    assert acc >= 0.95


def test_single_class_and_tiny_classes():
    est = SVMSelector().fit(np.arange(5.0)[:, None], ["a"] * 5)
    assert list(est.predict([[10.0]])) == ["a"]
    est = SVMSelector().fit(np.arange(5.0)[:, None], ["a", "a", "a", "a", "b"])
    assert est.predict([[0.0]])[0] in ("a", "b")


def _grid_scores(est, X, y, w, weighted):
    """Mean held-out (weighted) accuracy of every grid point, by a plain loop over the splits
    SVMSelector uses: an independent check of what its grid search optimises."""
    from sklearn.model_selection import RepeatedStratifiedKFold
    splits = list(RepeatedStratifiedKFold(n_splits=est.cv, n_repeats=est.cv_repeats, random_state=0).split(X, y))
    scores = {}
    for C in est.C_grid:
        for gamma in est.gamma_grid:
            per_split = []
            for train, test in splits:
                model = est._pipeline(C, gamma).fit(X[train], y[train], svc__sample_weight=w[train])
                hit = model.predict(X[test]) == y[test]
                per_split.append(np.average(hit, weights=w[test] if weighted else None))
            scores[(C, gamma)] = np.mean(per_split)
    return scores


def test_sample_weights_weigh_the_cross_validation_score_too():
    # near-ties (tiny weight, labels that are noise) around inputs whose label matters
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    noisy = rng.random(60) < 0.5
    y[noisy] = rng.integers(0, 2, noisy.sum())
    w = np.where(noisy, 0.02, 1.0)
    est = SVMSelector(C_grid=(0.1, 1.0, 10.0, 100.0), gamma_grid=(0.1, 1.0, 10.0)).fit(X, y, sample_weight=w)
    weighted, plain = _grid_scores(est, X, y, w, True), _grid_scores(est, X, y, w, False)
    best = max(weighted, key=weighted.get)
    assert max(plain, key=plain.get) != best            # the two criteria disagree on this data
    assert (est.best_params_["svc__C"], est.best_params_["svc__gamma"]) == best


def test_stratified_sample_is_bounded_and_keeps_every_class():
    y = np.array([0] * 950 + [1] * 48 + [2] * 2)
    idx = stratified_sample(y, 100, seed=3)
    assert len(idx) <= 100 + 5 and np.all(np.diff(idx) > 0)
    assert set(np.unique(y[idx])) == {0, 1, 2} and (y[idx] == 2).sum() == 2
    np.testing.assert_array_equal(stratified_sample(y, None), np.arange(len(y)))
    np.testing.assert_array_equal(stratified_sample(y, 5000), np.arange(len(y)))


def test_large_training_sets_give_a_bounded_model_that_still_learns():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(3000, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, "same", "opposite")
    est = SVMSelector(C_grid=(1.0, 10.0), gamma_grid=("scale",), max_search=300, max_fit=600).fit(X, y)
    assert est.n_fit_inputs_ <= 600 and est.pipeline_[-1].support_vectors_.shape[0] <= 600
    Xt = rng.uniform(-1, 1, size=(500, 2))
    assert (est.predict(Xt) == np.where(Xt[:, 0] * Xt[:, 1] > 0, "same", "opposite")).mean() > 0.9
    full = SVMSelector(C_grid=(1.0,), gamma_grid=("scale",), max_fit=None).fit(X, y)
    assert full.n_fit_inputs_ == 3000


def _noisy_three_classes(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] + 0.6 * rng.normal(size=n) > 0).astype(int) + (X[:, 2] > 0.5)
    return X, y


def test_support_vectors_beyond_the_bound_are_re_expressed_on_fewer():
    X, y = _noisy_three_classes(1500, 3)
    full = SVMSelector(C_grid=(10.0,), gamma_grid=("scale",), max_support_vectors=None).fit(X[:1000], y[:1000])
    small = SVMSelector(C_grid=(10.0,), gamma_grid=("scale",), max_support_vectors=250).fit(X[:1000], y[:1000])
    svc = small.pipeline_[-1]
    assert full.n_support_fitted_ == small.n_support_fitted_ == len(full.pipeline_[-1].support_) > 500
    assert len(svc.support_vectors_) <= 250 and svc.n_support_.sum() == len(svc.support_vectors_) == len(svc.support_)
    assert (svc.n_support_ >= 1).all() and svc._dual_coef_.shape == (2, len(svc.support_))
    agree = (small.predict(X[1000:]) == full.predict(X[1000:])).mean()
    assert agree > 0.93, agree                            # about the same function on under half the vectors
    accuracy = [(est.predict(X[1000:]) == y[1000:]).mean() for est in (full, small)]
    assert accuracy[1] > accuracy[0] - 0.02, accuracy
    model = SelectorModel.from_estimator(small, [f"f{j}" for j in range(6)])
    assert model.predict_index(X[1000:]).tolist() == small.predict(X[1000:]).tolist()
    assert model.compiled().predict_batch(X[1000:]).tolist() == small.predict(X[1000:]).tolist()


def test_a_binary_weighted_svm_is_re_expressed_with_its_signs():
    X, y = _noisy_three_classes(1200, 4)
    y = np.where(y > 0, "b", "a")
    w = np.random.default_rng(0).uniform(0.5, 2.0, 800)
    full = SVMSelector(C_grid=(10.0,), gamma_grid=("scale",), max_support_vectors=None).fit(X[:800], y[:800], w)
    small = SVMSelector(C_grid=(10.0,), gamma_grid=("scale",), max_support_vectors=150).fit(X[:800], y[:800], w)
    assert len(small.pipeline_[-1].support_) <= 150 < 250 < full.n_support_fitted_
    assert (small.predict(X[800:]) == full.predict(X[800:])).mean() > 0.93
    np.testing.assert_array_equal(small.pipeline_[-1].dual_coef_, -small.pipeline_[-1]._dual_coef_)
    model = SelectorModel.from_estimator(small, [f"f{j}" for j in range(6)])
    assert model.predict(X[800:]) == small.predict(X[800:]).tolist()


def test_the_default_bound_follows_the_dispatch_budget_and_bad_bounds_are_refused():
    X, y = _noisy_three_classes(3000, 5)
    X = np.hstack([X, np.random.default_rng(1).normal(size=(3000, 94))])    # 100 features: 117 vectors at most
    est = SVMSelector(C_grid=(10.0,), gamma_grid=("scale",)).fit(X, y)
    assert len(est.pipeline_[-1].support_) <= max_centres(100) == 117 < est.n_support_fitted_
    with pytest.raises(ValueError, match="max_centres"):
        SVMSelector(max_support_vectors=0).fit(X[:50], y[:50])


def test_a_size_in_millions_is_learnt_as_well_as_in_counts():
    """``log1p`` is nearly linear below 1: sizes in millions (1e-4 to 10) crowd together unless
    taken in a unit of their own (LogHeavyTails.unit_), and a threshold at 1,000 is lost."""
    rng = np.random.default_rng(3)
    sizes = 10 ** rng.uniform(2, 7, 300)
    y = np.where(sizes < 1e3, "small", "large")
    test = 10 ** rng.uniform(2, 7, 2000)
    truth = np.where(test < 1e3, "small", "large")
    counts = (SVMSelector().fit(sizes[:, None], y).predict(test[:, None]) == truth).mean()
    est = SVMSelector().fit(sizes[:, None] / 1e6, y)
    millions = (est.predict(test[:, None] / 1e6) == truth).mean()
    assert counts >= 0.97 and millions >= counts - 0.01
    model = SelectorModel.from_estimator(est, ["mrows"])
    assert model.params["unit"][0] == est.pipeline_[0].unit_[0] < 1e-3
    assert list(model.compiled().predict_batch(test[:, None] / 1e6)) == list(model.predict_index(test[:, None] / 1e6))
