import numpy as np

from nitro.learn import LogHeavyTails, SVMSelector
from nitro.learn.svm import stratified_sample


def test_log_only_heavy_tailed_nonnegative_columns():
    X = np.array([[1.0, -1.0, 0.5], [1e6, 2.0, 0.7], [10.0, 3.0, 0.9]])
    t = LogHeavyTails().fit(X)
    assert t.log_mask_.tolist() == [True, False, False]
    assert np.allclose(t.transform(X)[:, 0], np.log1p(X[:, 0]))


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
