import numpy as np
import pytest
import scipy.sparse as sp

from nitro import TimingPolicy, autotuner
from nitro.benchmarks import solver
from nitro.model import SelectorModel

FAST = TimingPolicy(min_repeats=1, max_repeats=2, target_seconds=0.0)
CG = [v for v in solver.VARIANT_NAMES if v.startswith("cg_")]


def _system(kind, n, seed=0):
    rng = np.random.default_rng(seed)
    A = solver.make_matrix(kind, n, rng)
    return A, rng.standard_normal(A.shape[0])


@pytest.mark.parametrize("name", solver.VARIANT_NAMES)
@pytest.mark.parametrize("kind,n", [(k, 300) for k in solver.SPD_KINDS] + [("poisson3d", 4096)])
def test_variants_reach_tolerance_and_match_spsolve(name, kind, n):
    A, b = _system(kind, n)
    x = solver.VARIANTS[name](A, b)
    assert x.dtype == np.float64 and x.shape == b.shape
    assert solver.relative_residual(A, b, x) <= solver.TOL
    exact = solver.reference(A, b)
    cond_bound = np.linalg.norm(exact) * 1e3 * solver.TOL  # forward error <= cond * residual
    assert np.linalg.norm(x - exact) <= max(cond_bound, 1e-6 * np.linalg.norm(exact))
    assert solver.residual_check(x, solver.residual_reference(A, b))


def test_block_jacobi_is_exact_on_aligned_block_diagonal_matrices():
    rng = np.random.default_rng(0)
    blocks = [(lambda G: G @ G.T + np.eye(solver.BLOCK_SIZE))(rng.standard_normal((solver.BLOCK_SIZE,) * 2))
              for _ in range(10)]
    A, b = sp.block_diag(blocks, format="csr"), rng.standard_normal(10 * solver.BLOCK_SIZE)
    for name in ("cg_block_jacobi", "bicgstab_block_jacobi"):
        assert solver.solve(A, b, name).iterations == 1
    assert solver.solve(A, b, "cg_jacobi").iterations > 1


def test_a_looser_tolerance_takes_fewer_iterations():
    A, b = _system("poisson2d", 900)
    tight, loose = solver.solve(A, b, "cg_jacobi"), solver.solve(A, b, "cg_jacobi", tol=1e-3)
    assert loose.iterations < tight.iterations and 1e-8 < loose.relative_residual <= 1e-3


def test_indefinite_system_cg_fails_bicgstab_converges():
    A, b = _system("helmholtz", 400, seed=1)
    assert np.linalg.eigvalsh(A.toarray()).min() < 0 < np.linalg.eigvalsh(A.toarray()).max()
    with pytest.raises(solver.ConvergenceError, match="cg_jacobi did not converge"):
        solver.VARIANTS["cg_jacobi"](A, b)
    x = solver.VARIANTS["bicgstab_jacobi"](A, b)
    assert solver.relative_residual(A, b, x) <= solver.TOL


@pytest.mark.parametrize("name", solver.VARIANT_NAMES)
def test_singular_and_nonconvergent_systems_raise(name):
    # 1-D Laplacian with Neumann ends: singular, b not in its range.
    n = 64
    A = sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1], format="lil")
    A[0, 0] = A[n - 1, n - 1] = 1
    b = np.random.default_rng(0).standard_normal(n)
    with pytest.raises(solver.ConvergenceError, match=f"{name} did not converge"):
        solver.solve(A.tocsr(), b, name, max_iter=300)
    # zero diagonal: Jacobi and Neumann cannot be built; block-Jacobi blocks are singular
    Z = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(solver.ConvergenceError, match="preconditioner setup failed|did not converge"):
        solver.solve(sp.block_diag([Z, sp.csr_matrix(np.zeros((1, 1)))], format="csr"), np.ones(3), name)
    # too few iterations
    P, bp = _system("poisson2d", 400)
    with pytest.raises(solver.ConvergenceError, match="maximum iterations reached after 3 iterations"):
        solver.solve(P, bp, name, max_iter=3)
    # NaN in A
    bad = P.copy()
    bad.data[5] = np.nan
    with pytest.raises(solver.ConvergenceError):
        solver.solve(bad, bp, name)


@pytest.mark.parametrize("name", solver.VARIANT_NAMES)
def test_one_by_one_and_zero_rhs(name):
    x = solver.VARIANTS[name](sp.csr_matrix([[4.0]]), np.array([2.0]))
    assert x == pytest.approx([0.5])
    assert np.array_equal(solver.VARIANTS[name](*_system("banded", 50)[:1], np.zeros(50)), np.zeros(50))


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="empty system"):
        solver.VARIANTS["cg_jacobi"](sp.csr_matrix((0, 0)), np.zeros(0))
    for max_iter in (1.5, 2**70, True):
        with pytest.raises(ValueError, match="max_iter must be a whole number"):
            solver.solve(sp.identity(3, format="csr"), np.ones(3), max_iter=max_iter)
    tri = sp.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(100, 100), format="csr")
    tri.indices[5] = 10**9                  # segfaulted in C++ before
    with pytest.raises(ValueError, match=r"solver: malformed CSR matrix \(a column index outside"):
        solver.VARIANTS["cg_jacobi"](tri, np.ones(100))
    with pytest.raises(ValueError, match="empty system"):
        solver.nnz(sp.csr_matrix((0, 0)))
    with pytest.raises(TypeError, match="scipy.sparse"):
        solver.VARIANTS["cg_jacobi"](np.eye(3), np.ones(3))
    with pytest.raises(ValueError, match="square"):
        solver.VARIANTS["cg_jacobi"](sp.csr_matrix(np.ones((2, 3))), np.ones(2))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        solver.VARIANTS["cg_jacobi"](sp.identity(3, format="csr"), np.ones(4))
    with pytest.raises(TypeError, match="complex"):
        solver.VARIANTS["cg_jacobi"](sp.identity(3, format="csr", dtype=complex), np.ones(3))
    with pytest.raises(ValueError, match="tol"):
        solver.solve(sp.identity(3), np.ones(3), tol=0)
    with pytest.raises(ValueError, match="unknown solver variant"):
        solver.solve(sp.identity(3), np.ones(3), "gmres")
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        solver.reference(sp.csr_matrix(np.zeros((2, 2))), np.ones(2))


def test_other_formats_and_index_types_are_converted():
    A, b = _system("poisson2d", 100)
    for M in (A.tocoo(), A.tocsc(), sp.csr_array(A), A.astype(np.float32),
              sp.csr_matrix((A.data, A.indices.astype(np.int64), A.indptr.astype(np.int64)), shape=A.shape)):
        assert solver.relative_residual(A, b, solver.VARIANTS["cg_block_jacobi"](M, b)) <= 1e-7


def test_features_on_a_hand_computed_example():
    A = sp.csr_matrix(np.array([[4.0, -1.0, 0.0, 0.0],
                                [-1.0, 4.0, 0.0, 0.0],
                                [0.0, 0.0, 1.0, 3.0],
                                [2.0, 0.0, 3.0, -2.0]]))
    b = np.ones(4)
    got = {name: f(A, b) for name, f in solver.FEATURES.items()}
    assert got == pytest.approx({"NNZ": 9, "Rows": 4, "Trace": 7, "DiagAvg": 1.75,
                                 "DiagVar": np.var([4, 4, 1, -2]), "DiagDominance": 0.5,
                                 "LBw": 3, "Norm1": 7})


def test_check_accepts_by_residual_not_by_equality():
    A, b = _system("random_spd", 200, seed=3)
    system = solver.residual_reference(A, b)
    x = solver.VARIANTS["bicgstab_jacobi"](A, b)
    assert solver.residual_check(x, system)
    assert not solver.residual_check(x + 1e-3, system)
    assert not solver.residual_check(np.full_like(x, np.nan), system)
    assert not solver.residual_check(x[:-1], system)


def test_baseline_uses_bicgstab_when_cg_fails():
    for kind in ("poisson2d", "helmholtz"):
        A, b = _system(kind, 300, seed=1)
        assert solver.relative_residual(A, b, solver.baseline(A, b)) <= solver.TOL * solver.RESIDUAL_SLACK


def test_inputs_deterministic_disjoint_and_symmetric():
    (a, ia), (b, ib) = solver.train_test_inputs(9, 9, seed=3)
    (a2, ia2), _ = solver.train_test_inputs(9, 9, seed=3)
    assert ia == ia2 and not set(ia) & set(ib)
    assert {i.split("-")[2] for i in ia} == set(solver.KINDS)
    for (A, rhs), (A2, rhs2) in zip(a, a2):
        assert (A != A2).nnz == 0 and np.array_equal(rhs, rhs2)
        assert abs(A - A.T).max() <= 1e-12 * abs(A).max()
        assert A.dtype == np.float64 and A.indices.dtype == np.int32
        assert solver.MIN_ROWS // 2 <= A.shape[0] <= 2 * solver.MAX_ROWS


def test_matrix_market_round_trip_and_errors(tmp_path):
    import scipy.io
    A, _ = _system("banded", 30)
    scipy.io.mmwrite(tmp_path / "a.mtx", A)
    M, b = solver.system_from_file(tmp_path / "a.mtx", seed=1)
    assert abs(M - A).max() == 0 and b.shape == (30,)
    assert solver.relative_residual(M, b, solver.VARIANTS["cg_neumann"](M, b)) <= solver.TOL
    scipy.io.mmwrite(tmp_path / "dense.mtx", A.toarray())          # 'array' format
    assert abs(solver.read_matrix_market(tmp_path / "dense.mtx") - A).max() == 0
    with pytest.raises(FileNotFoundError, match="no Matrix Market file"):
        solver.read_matrix_market(tmp_path / "missing.mtx")
    (tmp_path / "junk.mtx").write_text("not a matrix\n")
    with pytest.raises(ValueError, match="not a readable Matrix Market file"):
        solver.read_matrix_market(tmp_path / "junk.mtx")
    scipy.io.mmwrite(tmp_path / "rect.mtx", sp.random(3, 4, density=0.5, random_state=0))
    with pytest.raises(ValueError, match="square"):
        solver.read_matrix_market(tmp_path / "rect.mtx")
    scipy.io.mmwrite(tmp_path / "complex.mtx", sp.identity(2, format="coo", dtype=complex))
    with pytest.raises(ValueError, match="complex"):
        solver.read_matrix_market(tmp_path / "complex.mtx")


def test_tune_records_failures_and_dispatches(store):
    systems, ids = [], []
    for i, (kind, n) in enumerate([("poisson2d", 300), ("banded", 200), ("block", 240), ("scaled", 250),
                                   ("helmholtz", 300), ("saddle", 250), ("poisson3d", 300)]):
        systems.append(_system(kind, n, seed=i))
        ids.append(f"{kind}-{i}")
    cv = solver.make_code_variant()
    cv.record, cv.device_id = True, "test_cpu"
    tuner = autotuner("solver", store=store, policy=FAST, progress=False)
    tuner.set_training_args(systems, ids=ids)
    [model] = tuner.tune([cv])
    rows = {r.input_id: r for r in store.rows("solver", "test_cpu")}
    assert sorted(rows) == sorted(ids)
    helm = rows["helmholtz-4"]
    assert set(CG) <= set(helm.failed) and all("did not converge" in helm.failed[v] for v in CG)
    assert helm.best is not None and helm.best.startswith("bicgstab_")
    assert all(r.best in solver.VARIANT_NAMES for r in rows.values())
    again = solver.make_code_variant()
    again.model = SelectorModel.from_dict(store.model("solver", "test_cpu"))
    for A, b in systems[:4]:
        assert again.select(A, b) == cv.select(A, b)
        assert solver.relative_residual(A, b, cv(A, b)) <= solver.TOL
