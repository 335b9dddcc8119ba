"""Vuduc et al.'s cost-minimising and least-squares rules, and the Δmiss/Δerr metrics."""
import numpy as np

from nitro.learn import CostMinSelector, LeastSquaresSelector, SVMSelector, delta_err, delta_miss, fit_selector
from nitro.learn.base import best_index, regret_weights


def test_delta_metrics_as_in_vuduc():
    T = np.array([[1.0, 2.0], [1.0, 1.1], [3.0, 1.0]])
    chosen = np.array([0, 1, 0])
    assert np.isclose(delta_miss(T, chosen), 2 / 3)
    assert np.isclose(delta_err(T, chosen), (0 + 0.1 + 2.0) / 3)


def test_cost_minimisation_weighs_how_much_slower_a_wrong_choice_is():
    """Features cannot tell the inputs apart: 'risky' is fastest (by 5%) on 60% of them but
    10× slower on the rest. A rule that counts misses takes 'risky'; the cost-minimising rule
    takes 'safe', missing more often but losing far less."""
    rng = np.random.default_rng(0)
    n = 200
    X = np.ones((n, 1)) + 1e-9 * rng.random((n, 1))
    lucky = rng.random(n) < 0.6
    T = np.column_stack([np.where(lucky, 1.0, 10.0), np.full(n, 1.05)])
    costmin = fit_selector(CostMinSelector(), X, T).predict(X)
    labels = SVMSelector().fit(X, best_index(T)).predict(X)          # unweighted: counts misses
    assert (costmin == 1).all() and (labels == 0).mean() > 0.9
    assert delta_miss(T, costmin) > delta_miss(T, labels)
    assert delta_err(T, costmin) < 0.1 < delta_err(T, labels)
    # fit_selector weighs each label by its runner-up's regret, so the SVM takes 'safe' too
    weighted = fit_selector(SVMSelector(), X, T).predict(X)
    assert (weighted == 1).mean() > 0.9 and delta_err(T, weighted) < 0.1


def test_regret_weights_are_the_runner_ups_slowdown_within_bounds():
    T = np.array([[1.0, 1.001, 5.0], [2.0, 2.5, np.nan], [1.0, 9.0, 30.0], [3.0, np.nan, np.nan]])
    w = regret_weights(T)
    assert np.isclose(w.mean(), 1.0) and np.allclose(w / w[2], [0.01, 0.25, 1.0, 1.0])


def test_least_squares_recovers_power_laws_and_their_crossover():
    n = np.logspace(2, 7, 60)
    T = np.column_stack([1e-9 * n ** 2, 1e-6 * n * np.log(n) + 1e-3])
    est = LeastSquaresSelector().fit(n[:, None], T)
    test = np.logspace(2.1, 6.9, 40)
    truth = np.column_stack([1e-9 * test ** 2, 1e-6 * test * np.log(test) + 1e-3]).argmin(axis=1)
    assert (est.predict(test[:, None]) == truth).mean() >= 0.9


def test_a_variant_that_always_failed_is_never_chosen():
    rng = np.random.default_rng(1)
    X = rng.random((50, 2))
    T = np.column_stack([1 + X[:, 0], np.full(50, np.nan), 2 - X[:, 0]])
    for est in (CostMinSelector(), LeastSquaresSelector()):
        assert 1 not in est.fit(X, T).predict(rng.random((200, 2)) * 3 - 1)
