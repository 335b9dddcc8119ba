import gzip

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from nitro import TimingPolicy, autotuner
from nitro.benchmarks import FAMILIES, load, spmv
from nitro.measurement import outputs_match
from nitro.model import SelectorModel

FAST = TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0)


def assert_all_variants_match(A, x, only_allowed=False):
    """Every variant (or every one the constraints allow) equals SciPy up to rounding."""
    A = spmv.as_matrix(A)
    expected = spmv.reference(A, x)
    bound = 1e-12 * (abs(A.csr) @ np.abs(x))     # rounding differs with the summation order
    cv = spmv.make_code_variant()
    allowed = cv.allowed(cv.compute_features(A, x)) if only_allowed else cv.variants
    for name, fn in spmv.VARIANTS.items():
        if not allowed[name]:
            continue
        y = fn(A, x)
        assert y.dtype == np.float64 and y.shape == (A.shape[0],), name
        assert np.all(np.abs(y - expected) <= bound), name


def edge_cases():
    rng = np.random.default_rng(0)
    empty_rows = sp.random(50, 40, density=0.1, random_state=1, format="lil")
    empty_rows[[0, 7, 8, 49], :] = 0
    full_row = sp.identity(300, format="lil") * 2.0
    full_row[5, :] = rng.standard_normal(300)
    duplicates = sp.coo_matrix(([1.0, 2.0, 0.0, 4.0], ([0, 0, 1, 2], [1, 1, 2, 0])), shape=(3, 3))
    return {
        "0x0": sp.csr_matrix((0, 0)),
        "0x5": sp.csr_matrix((0, 5)),
        "5x0": sp.csr_matrix((5, 0)),
        "all zero": sp.csr_matrix((6, 4)),
        "one element": sp.csr_matrix(np.array([[3.5]])),
        "empty rows": empty_rows,
        "a full row": full_row,
        "wide": sp.random(7, 300, density=0.3, random_state=2),
        "tall": sp.random(300, 7, density=0.3, random_state=3),
        "duplicates and explicit zero": duplicates,
        "dense ndarray": rng.standard_normal((9, 11)),
        "int values": sp.csr_matrix(np.arange(12).reshape(3, 4)),
    }


@pytest.mark.parametrize("case", list(edge_cases()))
def test_variants_match_scipy_on_edge_cases(case):
    M = edge_cases()[case]
    x = np.random.default_rng(1).standard_normal(M.shape[1])
    assert_all_variants_match(M, x)
    np.testing.assert_allclose(spmv.reference(M, x), sp.csr_matrix(M, dtype=float) @ x)


def test_a_non_finite_x_reaches_only_the_rows_that_use_it():
    """DIA stores zeros (padding, fill-in); multiplied by an inf in x they gave NaN in rows with
    no entry in that column (SciPy's own DIA product does): every variant answers as CSR."""
    A = spmv.SpmvMatrix(sp.csr_matrix(np.array([[1.0, 0, 0], [1, 1, 0], [0, 0, 1]])))
    for x in (np.array([1.0, np.inf, 1.0]), np.array([np.nan, 1.0, 1.0])):
        expected = A.csr @ x
        for name, fn in spmv.VARIANTS.items():
            np.testing.assert_array_equal(fn(A, x), expected, err_msg=name)


def stored_zero_matrices():
    """Matrices with explicitly stored zeros (+0.0, -0.0, a duplicate pair summing to 0) beside
    DIA padding (the offset-3 diagonal is stored in even rows only, so odd rows pad it)."""
    tiny = sp.csr_matrix((np.array([0.0, 1.0]), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))
    n = 3000                                     # several of the DIA kernel's 256-row blocks
    rows = np.concatenate([np.arange(n), np.arange(1, n), np.arange(0, n - 3, 2)])
    cols = np.concatenate([np.arange(n), np.arange(n - 1), np.arange(3, n, 2)])
    values = np.random.default_rng(5).integers(1, 5, rows.size).astype(float)   # exact sums
    band = sp.csr_matrix((values, (rows, cols)), shape=(n, n))
    band.data[::7] = 0.0
    band.data[3::11] = -0.0
    duplicates = sp.coo_matrix(([1.0, -1.0, 2.0, 3.0], ([0, 0, 1, 2], [1, 1, 1, 0])), shape=(3, 3))
    return {"2x2": tiny, "banded": band, "duplicates summing to zero": duplicates}


def stored_zero_vectors(A):
    """x with ordinary values, and with inf, -inf, NaN or all three at the columns that hold a
    stored zero (a padded slot of DIA reads some of those columns too)."""
    zero_columns = np.unique(A.indices[A.data == 0])
    ordinary = np.arange(A.shape[1], dtype=float) % 5 - 2
    out = {"ordinary": ordinary}
    for name, value in (("inf", np.inf), ("-inf", -np.inf), ("nan", np.nan)):
        out[name] = ordinary.copy()
        out[name][zero_columns] = value
    out["mixed"] = ordinary.copy()
    out["mixed"][zero_columns] = np.resize([np.inf, -np.inf, np.nan], zero_columns.size)
    return out


@pytest.mark.parametrize("case", list(stored_zero_matrices()))
def test_a_stored_zero_times_a_non_finite_x_is_nan_in_every_variant(case):
    """SciPy's CSR product multiplies a stored zero like any entry: 0 * inf is NaN. DIA skipped
    every zero (to skip its padding) and gave a finite value there; the conversion now holds a
    stored zero as -0.0 and the kernel skips only +0.0 padding, so every variant gives SciPy's
    NaNs, and only SciPy's (padding still adds nothing)."""
    A = spmv.SpmvMatrix(stored_zero_matrices()[case])
    assert np.any(A.data == 0)
    for what, x in stored_zero_vectors(A).items():
        expected = A.csr @ x
        assert what == "ordinary" or np.isnan(expected).any()
        for name, fn in spmv.VARIANTS.items():
            y = fn(A, x)
            np.testing.assert_array_equal(y, expected, err_msg=f"{name}, x {what}")
            assert outputs_match(y, expected), (name, what)


def test_dia_holds_a_stored_zero_as_negative_zero_and_pads_with_positive_zero():
    A = spmv.SpmvMatrix(stored_zero_matrices()["banded"])
    offsets, data = A.dia
    rows = np.repeat(np.arange(A.shape[0]), A.row_lengths)
    stored = np.zeros(data.shape, bool)
    stored[np.searchsorted(offsets, A.indices - rows), rows] = True
    zero = data == 0
    assert np.all(np.signbit(data[zero & stored])) and not np.any(np.signbit(data[zero & ~stored]))
    assert np.any(zero & stored) and np.any(zero & ~stored)
    np.testing.assert_array_equal(data[stored], A.data[np.lexsort((rows, A.indices - rows))])


def test_the_family_check_takes_a_zero_of_either_sign_and_nan_where_the_reference_has_it():
    """y may hold -0.0 where SciPy has 0.0 (a stored -0.0 times a positive x); the check the
    tuner applies (outputs_match) counts them equal, and NaN equal to NaN."""
    assert outputs_match(np.array([-0.0, np.nan, 1.0]), np.array([0.0, np.nan, 1.0]))
    assert not outputs_match(np.array([0.0, 1.0]), np.array([np.nan, 1.0]))


def test_tuning_counts_no_variant_wrong_on_stored_zeros_and_a_non_finite_x():
    """Measured by the tuner (the family's check against SciPy), dia was a wrong result here."""
    args, ids = [], []
    for case, M in stored_zero_matrices().items():
        A = spmv.SpmvMatrix(M)
        for what, x in stored_zero_vectors(A).items():
            args.append((A, x))
            ids.append(f"{case}-{what}")
    cv = spmv.make_code_variant()
    tuner = autotuner("spmv", policy=FAST, progress=False)
    tuner.set_training_args(args, ids=ids)
    rows = tuner.measure(cv)
    assert len(rows) == len(args)
    for row in rows:
        assert not any(why.startswith("wrong result") for why in row.failed.values()), (row.input_id, row.failed)
        assert row.times.get("dia") is not None, (row.input_id, row.failed)


def test_variants_match_scipy_on_generated_matrices_and_thread_counts():
    args, ids = spmv.make_inputs(12, seed=11, min_nnz=30_000, max_nnz=60_000)
    long_row = sp.random(40, 50_000, density=0.001, random_state=4, format="lil")
    long_row[3, :] = 1.0                         # one row longer than several threads' share
    args.append((spmv.SpmvMatrix(long_row), np.linspace(-1, 1, 50_000)))
    for threads in (1, 3, 7):
        with threadpool_limits(limits=threads, user_api="openmp"):
            for A, x in args:
                assert_all_variants_match(A, x, only_allowed=True)


def test_features_on_a_hand_computed_example():
    A = spmv.SpmvMatrix(np.array([[1, 0, 2, 0],
                                  [0, 0, 0, 0],
                                  [3, 4, 5, 0],
                                  [0, 0, 0, 6]]))
    # row lengths 2, 0, 3, 1; diagonals (column - row) -2, -1, 0, 2
    values = {name: fn(A, None) for name, fn in spmv.FEATURES.items()}
    assert values == pytest.approx({"AvgNZPerRow": 1.5, "RLSD": np.sqrt(1.25), "MaxDeviation": 1.5,
                                    "DIA-Fillin": 4 * 4 / 6, "ELL-Fillin": 3 * 4 / 6})
    offsets, data = A.dia
    assert offsets.tolist() == [-2, -1, 0, 2]
    assert data[offsets.tolist().index(-2)].tolist() == [0, 0, 3, 0]
    indices, data = A.ell
    assert indices.shape == (3, 4) and indices[:, 1].tolist() == [-1, -1, -1]
    empty = spmv.SpmvMatrix(sp.csr_matrix((0, 0)))
    assert all(fn(empty, None) == 0.0 for fn in spmv.FEATURES.values())


def test_conversions_are_cached_and_timed_separately():
    (A, x), = spmv.make_inputs(1, seed=2, min_nnz=5_000, max_nnz=5_000)[0]
    assert A.conversion_seconds == {}
    spmv.ell(A, x)
    first = A.ell
    spmv.ell(A, x)
    assert A.ell is first and set(A.conversion_seconds) == {"ell"}
    spmv.dia(A, x), spmv.coo(A, x)
    assert set(A.conversion_seconds) == {"ell", "dia", "coo"}
    assert A.stats is A.stats


def test_constraints_exclude_padded_formats_with_large_fillin(monkeypatch):
    cv = spmv.make_code_variant()
    stencil = spmv.SpmvMatrix(sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(200, 200)))
    arrow = sp.identity(200, format="lil")
    arrow[0, :] = 1.0                            # one full row: ELL and DIA pad every row
    arrow = spmv.SpmvMatrix(arrow)
    x = np.ones(200)
    assert cv.allowed(cv.compute_features(stencil, x)) == dict.fromkeys(spmv.VARIANT_NAMES, True)
    assert spmv.dia_fillin(arrow) > spmv.MAX_FILLIN and spmv.ell_fillin(arrow) > spmv.MAX_FILLIN
    assert cv.allowed(cv.compute_features(arrow, x)) == {
        "csr_scalar": True, "csr_vector": True, "ell": False, "dia": False, "coo": True}
    assert cv.select(arrow, x) == "csr_vector"
    monkeypatch.setattr(spmv, "MAX_PADDED_ENTRIES", 1000)
    with pytest.raises(ValueError, match="over the limit"):
        spmv.ell(arrow, x)


def test_bad_arguments_are_named():
    A = spmv.SpmvMatrix(sp.identity(4))
    with pytest.raises(ValueError, match="length 4"):
        spmv.csr_scalar(A, np.ones(3))
    with pytest.raises(TypeError, match="real"):
        spmv.csr_scalar(A, np.ones(4, complex))
    with pytest.raises(TypeError, match="complex"):
        spmv.SpmvMatrix(sp.identity(3, dtype=complex))
    with pytest.raises(ValueError, match="2-D"):
        spmv.SpmvMatrix(np.ones(3))
    with pytest.raises(ValueError, match="indptr must start at 0"):
        spmv._cpp.csr_scalar(np.array([0, 5], np.int32), np.zeros(1, np.int32), np.zeros(1), np.ones(1))
    with pytest.raises(TypeError):                  # no silent conversion in the binding
        spmv._cpp.csr_scalar(A.indptr.astype(np.int64), A.indices, A.data, np.ones(4))
    tri = sp.diags([1.0, 4.0, 1.0], [-1, 0, 1], shape=(100, 100), format="csr")
    for bad in (100, 10**9, -1):               # read past x (or crashed) before
        broken = tri.copy()
        broken.indices[5] = bad
        with pytest.raises(ValueError, match=r"SpMV: malformed CSR matrix \(a column index outside \[0, 100\)\)"):
            spmv.csr_scalar(broken, np.ones(100))


def test_inputs_deterministic_disjoint_and_varied():
    (a, ia), (b, ib) = spmv.train_test_inputs(12, 6, seed=3)
    (a2, ia2), _ = spmv.train_test_inputs(12, 6, seed=3)
    assert ia == ia2 and all(A.input_id == A2.input_id and np.array_equal(x, x2)
                             for (A, x), (A2, x2) in zip(a, a2))
    assert not set(ia) & set(ib)
    assert {i.split("-")[2] for i in ia} == set(spmv.KINDS)
    assert all(spmv.MIN_NNZ // 3 <= A.nnz <= 3 * spmv.MAX_NNZ for A, _ in a + b)
    assert "spmv" in FAMILIES and load("spmv") is spmv


def test_matrix_market_files(tmp_path):
    M = sp.random(30, 20, density=0.2, random_state=5, format="csr")
    scipy.io.mmwrite(tmp_path / "mine.mtx", M)
    with open(tmp_path / "mine.mtx", "rb") as src, gzip.open(tmp_path / "zipped.mtx.gz", "wb") as dst:
        dst.write(src.read())
    args, ids = spmv.matrix_market_inputs([tmp_path / "mine.mtx", tmp_path / "zipped.mtx.gz"])
    assert ids == ["mine.mtx", "zipped.mtx.gz"]
    for A, x in args:
        assert A.shape == (30, 20) and A.nnz == M.nnz
        assert_all_variants_match(A, x)

    (tmp_path / "bad.mtx").write_text("this is not\na matrix market file\n")
    with pytest.raises(ValueError, match="bad.mtx: not a valid Matrix Market file"):
        spmv.read_matrix_market(tmp_path / "bad.mtx")
    (tmp_path / "cut.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 4\n1 1 1.0\n")
    with pytest.raises(ValueError, match="cut.mtx"):
        spmv.read_matrix_market(tmp_path / "cut.mtx")
    (tmp_path / "complex.mtx").write_text(
        "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n")
    with pytest.raises(ValueError, match="complex.mtx: .*complex"):
        spmv.read_matrix_market(tmp_path / "complex.mtx")
    with pytest.raises(FileNotFoundError, match="missing.mtx"):
        spmv.read_matrix_market(tmp_path / "missing.mtx")



def test_two_matrix_market_files_of_one_name_are_named(tmp_path):
    """Two files of one name (their input id) were refused with "two files have the same name",
    which named neither, and only after every file had been read."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        scipy.io.mmwrite(tmp_path / folder / "m.mtx", sp.identity(3, format="csr"))
    paths = [tmp_path / "a" / "m.mtx", tmp_path / "b" / "m.mtx"]
    with pytest.raises(ValueError, match=r"a/m\.mtx' and '.*b/m\.mtx' have the same file name 'm\.mtx'"):
        spmv.matrix_market_inputs(paths)
    (tmp_path / "b" / "m.mtx").write_text("not a matrix\n")        # refused before any file is read
    with pytest.raises(ValueError, match="same file name"):
        spmv.matrix_market_inputs(paths)

def test_tune_records_and_dispatches(store):
    small, ids = spmv.make_inputs(12, seed=15, min_nnz=1_000, max_nnz=8_000)
    cv = spmv.make_code_variant()
    cv.record, cv.device_id = True, "test_cpu"
    tuner = autotuner("spmv", store=store, policy=FAST, progress=False)
    tuner.set_training_args(small, ids=ids)
    [model] = tuner.tune([cv])
    rows = store.rows("spmv", "test_cpu")
    assert sorted(r.input_id for r in rows) == sorted(ids)
    assert all(r.best in spmv.VARIANT_NAMES for r in rows)
    excluded = [r for r in rows if r.failed.get("dia") == "excluded by constraint"]
    assert excluded and all(r.features["DIA-Fillin"] > spmv.MAX_FILLIN for r in excluded)
    assert not any("wrong" in reason for r in rows for reason in r.failed.values())
    again = spmv.make_code_variant()
    again.model = SelectorModel.from_dict(store.model("spmv", "test_cpu"))
    for A, x in small[:4]:
        assert again.select(A, x) == cv.select(A, x)
        np.testing.assert_allclose(cv(A, x), spmv.reference(A, x), rtol=1e-12, atol=1e-12)
