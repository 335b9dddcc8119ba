import numpy as np

from nitro.learn import LogHeavyTails, SVMSelector


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
