"""The Kronecker KRR grid: the Nyström basis used for large training sets against the exact one."""
import numpy as np
import pytest

from nitro.learn.budget import max_centres
from nitro.learn.kron import KronKRRGrid, device_kernel, pivoted_landmarks, rbf, rbf_dot


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


def test_a_bounded_exact_fit_keeps_its_basis_and_exports_its_function_on_fewer_centres():
    X, D, Y = _grid_data(n=500)
    exact = KronKRRGrid(X, Y, max_centres=None)
    bounded = KronKRRGrid(X, Y, max_centres=150)
    assert exact.centers.shape == (500, 4) and bounded.centers.shape == (150, 4) and bounded.n_components is None
    assert {tuple(c) for c in bounded.centers} <= {tuple(x) for x in X}          # a sample of the inputs
    h, mu = _fit(bounded, D, [0, 1, 2], 3)
    want = exact.predict_train(*_fit(exact, D, [0, 1, 2], 3))
    np.testing.assert_allclose(bounded.predict_train(h, mu), want)              # fits and CV-DFS: unchanged
    beta = bounded.weights(h)
    assert beta.shape == (150, Y.shape[2])
    error = np.abs(rbf(X, bounded.centers, bounded.gamma_x) @ beta + mu - want)
    assert error.mean() < 0.01 and error.max() < 0.15, (error.mean(), error.max())
    finer = KronKRRGrid(X, Y, max_centres=300)
    h, mu = _fit(finer, D, [0, 1, 2], 3)
    assert np.abs(rbf(X, finer.centers, finer.gamma_x) @ finer.weights(h) + mu - want).max() < error.max() / 5


def test_the_default_bound_follows_the_dispatch_budget_of_the_features():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 100))                       # 100 features: 117 centres at most
    Y = np.sin(X[:, :1])[:, :, None].repeat(3, axis=1)
    assert len(KronKRRGrid(X, Y).centers) == max_centres(100) == 117
    assert len(KronKRRGrid(X, Y, max_centres=None).centers) == 300
    with pytest.raises(ValueError, match="max_centres"):
        KronKRRGrid(X, Y, max_centres=0)


def test_duplicate_inputs_are_never_two_centres():
    X, D, Y = _grid_data(n=200)
    X = np.vstack([X, X[:100]])
    Y = np.concatenate([Y, Y[:100]])
    grid = KronKRRGrid(X, Y, max_centres=250)
    assert len(np.unique(grid.centers, axis=0)) == len(grid.centers) == 200
    assert np.isfinite(grid.weights(_fit(grid, D, [0, 1, 2], 3)[0])).all()


def test_pivoted_landmarks_cover_the_spread_not_the_density():
    rng = np.random.default_rng(3)
    X = np.vstack([0.05 * rng.normal(size=(300, 2)), [[5.0, 0.0], [0.0, -5.0], [4.0, 4.0]], np.zeros((5, 2))])
    picked = pivoted_landmarks(X, 4, 0.5)
    assert np.all(np.diff(picked) > 0) and {300, 301, 302} <= set(picked.tolist())   # the far-out points first
    assert len(pivoted_landmarks(np.zeros((10, 2)), 5, 0.5)) == 1                   # one distinct row: one pivot


def test_constant_input_columns_do_not_widen_the_input_kernel():
    """A column constant over the training inputs adds no distance, so it must not count in
    the kernel's γ = 1 / (informative columns) either."""
    rng = np.random.default_rng(0)
    X = rng.normal(0, 1, (40, 3))
    Y = rng.uniform(0, 1, (40, 2, 2))
    padded = np.hstack([X, np.zeros((40, 20))])
    assert KronKRRGrid(padded, Y).gamma_x == KronKRRGrid(X, Y).gamma_x == 1 / 3


def test_a_weighted_fit_is_the_weighted_kernel_ridge_solution():
    """Weights per input: the grid's shared-basis fit equals a direct solve of
    ``(K_d ⊗ K_x + λ·I ⊗ W⁻¹) α = y``, and the expansion it exports reproduces it, exact or Nyström."""
    X, D, Y = _grid_data(n=120)
    w = np.random.default_rng(4).uniform(0.2, 5.0, len(X))
    sources, target = [0, 1, 2], 3
    Kd, kd = device_kernel(D, sources, target)
    Kx = rbf(X, X, 1 / X.shape[1])
    mu = Y[:, sources].mean(axis=(0, 1))
    n, m = len(X), len(sources)
    alpha = np.linalg.solve(np.kron(Kd, Kx) + np.diag(np.tile(1 / w, m)),
                            (Y[:, sources] - mu).transpose(1, 0, 2).reshape(n * m, -1))
    want = np.kron(kd[None, :], Kx) @ alpha + mu
    grid = KronKRRGrid(X, Y, weights=w)
    h, mu_g = grid.dual(sources, Kd, kd, 1.0)
    np.testing.assert_allclose(grid.predict_train(h, mu_g), want, atol=1e-8)
    np.testing.assert_allclose(rbf(X, grid.centers, grid.gamma_x) @ grid.weights(h) + mu_g, want, atol=1e-8)
    assert np.abs(want - KronKRRGrid(X, Y).predict_train(*_fit(KronKRRGrid(X, Y), D, sources, target))).max() > 1e-3
    small = KronKRRGrid(X, Y, weights=w, n_components=30)
    h, mu_s = small.dual(sources, Kd, kd, 1.0)
    np.testing.assert_allclose(rbf(X, small.centers, small.gamma_x) @ small.weights(h) + mu_s,
                               small.predict_train(h, mu_s), atol=1e-8)
    np.testing.assert_allclose(small.predict_train_many([(h, mu_s)], np.arange(0, n, 7))[:, 0],
                               small.predict_train(h, mu_s)[::7], atol=1e-10)
    with pytest.raises(ValueError, match="weights"):
        KronKRRGrid(X, Y, weights=np.zeros(len(X)))


def test_time_weights_grow_with_an_inputs_time_up_to_a_cap():
    from nitro.learn.kron import time_weights
    rng = np.random.default_rng(5)
    scale = np.exp(np.linspace(-3, 6, 200))                    # inputs from tiny to large
    times = scale[None, :, None] * rng.uniform(1, 2, (3, 200, 4))
    times[1, 10, :] = np.nan                                   # one source timed nothing there
    w = time_weights(times, 0.5)
    assert np.isclose(w.mean(), 1.0) and np.all(w > 0)
    assert np.corrcoef(np.log(scale), np.log(w))[0, 1] > 0.99  # the square root of the time, roughly
    assert (w == w.max()).sum() >= 2                           # the largest 1% capped at one value
    assert np.allclose(time_weights(times), 1.0)                # the default: every input alike
    assert np.allclose(time_weights(np.full((2, 5, 3), np.nan), 0.5), 1.0)


@pytest.mark.parametrize("n_components", [None, 40])
def test_grids_on_the_same_inputs_share_one_basis_within_memo_kept(n_components):
    """`nitro evaluate` builds a grid per target on the same training inputs: within memo.kept
    the input kernel's basis is computed once, and each grid fits and predicts as a fresh one."""
    from nitro import memo
    X, D, Y = _grid_data(n=300)
    fresh = KronKRRGrid(X, Y[:, ::-1], n_components=n_components, max_centres=100)
    with memo.kept():
        first = KronKRRGrid(X, Y, n_components=n_components, max_centres=100)
        second = KronKRRGrid(X.copy(), Y[:, ::-1], n_components=n_components, max_centres=100)
        other = KronKRRGrid(X + 1e-3, Y, n_components=n_components, max_centres=100)
        weighted = KronKRRGrid(X, Y, n_components=n_components, max_centres=100, weights=np.linspace(0.5, 1.5, 300))
    assert second.U is first.U and second.centers is first.centers
    assert other.U is not first.U and weighted.U is not first.U
    assert KronKRRGrid(X, Y, n_components=n_components, max_centres=100).U is not first.U   # kept no more
    h, mu = _fit(second, D, [0, 1, 2], 3)
    np.testing.assert_array_equal(second.predict_train(h, mu), fresh.predict_train(*_fit(fresh, D, [0, 1, 2], 3)))
    np.testing.assert_array_equal(second.weights(h), fresh.weights(h))


def test_duals_of_several_device_kernels_equal_each_dual_alone():
    """CV-DFS fits every subset's model over the same sources in one call: the sources' centred
    targets are shared, and each model is exactly the one a call of its own gives."""
    X, D, Y = _grid_data(n=200)
    grid = KronKRRGrid(X, Y)
    kernels = [device_kernel(D[:, cols], [0, 1, 2], 3) for cols in ([0], [1, 2], [0, 1, 2])]
    for (h, mu), (Kd, kd) in zip(grid.duals([0, 1, 2], kernels, 1.0), kernels, strict=True):
        h1, mu1 = grid.dual([0, 1, 2], Kd, kd, 1.0)
        np.testing.assert_array_equal(h, h1)
        np.testing.assert_array_equal(mu, mu1)
