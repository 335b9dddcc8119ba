"""The Kronecker KRR grid: the Nyström basis used for large training sets against the exact one."""
import numpy as np
import pytest

from nitro.learn.kron import KronKRRGrid, device_kernel, rbf, rbf_dot


def _grid_data(n=600, p=4, devices=4, v=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    D = rng.normal(size=(devices, 3))
    Y = np.stack([np.stack([np.sin(X[:, 0] * (1 + c) + D[d, 0]) for c in range(v)], axis=1)
                  for d in range(devices)], axis=1)                    # (n, devices, v)
    return X, D, Y


def _fit(grid, D, sources, target):
    Kd, kd = device_kernel(D, sources, target)
    return grid.dual(sources, Kd, kd, 1.0)


def test_nystroem_predictions_approach_the_exact_ones_as_landmarks_grow():
    X, D, Y = _grid_data()
    exact = KronKRRGrid(X, Y, n_components=None)
    h, mu = _fit(exact, D, [0, 1, 2], 3)
    want = exact.predict_train(h, mu)
    errors = []
    for m in (20, 100, 400):
        grid = KronKRRGrid(X, Y, n_components=m)
        assert grid.centers.shape == (m, X.shape[1]) and grid.n_components == m
        h, mu = _fit(grid, D, [0, 1, 2], 3)
        errors.append(np.abs(grid.predict_train(h, mu) - want).mean())
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.01, errors


def test_nystroem_expansion_over_landmarks_reproduces_its_training_predictions():
    X, D, Y = _grid_data()
    grid = KronKRRGrid(X, Y, n_components=50)
    h, mu = _fit(grid, D, [0, 1, 3], 2)
    beta = grid.weights(h)
    assert beta.shape == (50, Y.shape[2])                    # bounded by the landmarks, not by n
    via_centres = rbf(X, grid.centers, grid.gamma_x) @ beta + mu
    np.testing.assert_allclose(via_centres, grid.predict_train(h, mu), atol=1e-8)


def test_auto_is_exact_on_small_grids_and_bad_components_are_refused():
    X, D, Y = _grid_data(n=100)
    assert KronKRRGrid(X, Y).n_components is None
    assert KronKRRGrid(X, Y, n_components=500).n_components is None      # more landmarks than inputs
    with pytest.raises(ValueError, match="n_components"):
        KronKRRGrid(X, Y, n_components=0)


def test_rbf_dot_in_chunks_equals_the_whole_product():
    rng = np.random.default_rng(1)
    A, B, W = rng.normal(size=(50, 3)), rng.normal(size=(7, 3)), rng.normal(size=(7, 2))
    np.testing.assert_allclose(rbf_dot(A, B, 0.3, W, chunk=8), rbf(A, B, 0.3) @ W)


def test_many_models_in_one_pass_equal_one_at_a_time():
    X, D, Y = _grid_data(n=200)
    for grid in (KronKRRGrid(X, Y), KronKRRGrid(X, Y, n_components=40)):
        duals = [_fit(grid, D[:, cols], [0, 1, 2], 3) for cols in ([0], [1, 2], [0, 1, 2])]
        many = grid.predict_train_many(duals)
        for j, (h, mu) in enumerate(duals):
            np.testing.assert_allclose(many[:, j], grid.predict_train(h, mu), atol=1e-10)
