"""The dispatch budget of exported RBF models and the least-squares re-expression on fewer centres."""
import numpy as np
import pytest

from nitro.learn.budget import (DISPATCH_BUDGET, MIN_CENTRES, PER_CENTRE, PER_FEATURE, max_centres,
                                reexpression_weights, resolve_max_centres)
from nitro.learn.kron import rbf


def test_more_features_leave_room_for_fewer_centres_within_the_budget():
    assert [max_centres(d) for d in (12, 21, 55)] == [686, 504, 232]
    for d in (1, 12, 55, 150):
        cost = PER_FEATURE * d + (d + PER_CENTRE) * np.array([max_centres(d), max_centres(d) + 1])
        assert cost[0] <= DISPATCH_BUDGET < cost[1]
    assert max_centres(400) == max_centres(10 ** 6) == MIN_CENTRES


def test_the_setting_is_auto_none_or_a_positive_int():
    assert resolve_max_centres("auto", 12) == 686
    assert resolve_max_centres(None, 12) is None and resolve_max_centres(np.int64(30), 12) == 30
    for bad in (0, -3, 2.5, True, "all"):
        with pytest.raises(ValueError, match="max_centres"):
            resolve_max_centres(bad, 12)


def _least_squares_inputs(X, C, F, gamma=0.5):
    K = rbf(X, C, gamma)
    return K.T @ K, K.T @ F, rbf(C, C, gamma)


def test_a_function_of_the_centres_is_reproduced():
    rng = np.random.default_rng(0)
    X, C = rng.normal(size=(400, 3)), rng.normal(size=(40, 3))
    F = rbf(X, C, 0.5) @ rng.normal(size=(40, 2))
    W = reexpression_weights(*_least_squares_inputs(X, C, F), len(X))
    np.testing.assert_allclose(rbf(X, C, 0.5) @ W, F, atol=1e-3 * np.abs(F).max())


def test_duplicate_centres_get_shared_not_huge_opposite_weights():
    rng = np.random.default_rng(1)
    X, C = rng.normal(size=(300, 2)), rng.normal(size=(20, 2))
    C = np.vstack([C, C[:5]])
    F = np.sin(X[:, :1])
    W = reexpression_weights(*_least_squares_inputs(X, C, F), len(X))
    np.testing.assert_allclose(W[:5], W[20:], atol=1e-6)
    assert np.abs(W).max() < 100
