import numpy as np
import pytest
import scipy.sparse as sp

from nitro import TimingPolicy, _variants, autotuner
from nitro.benchmarks import spmv, spmv_cuda


@pytest.fixture(scope="module")
def gpu():
    """pycuda's gpuarray on a live GPU, or a skip saying what is missing."""
    if not _variants.HAVE_CUDA:
        pytest.skip("nitro was built without CUDA (no nvcc at build time)")
    pytest.importorskip("pycuda", reason="pycuda is not installed (extra 'gpu')")
    try:
        return spmv_cuda.gpuarray()
    except RuntimeError as exc:
        pytest.skip(str(exc))


def host_inputs():
    arrow = sp.identity(300, format="lil")
    arrow[7, :] = 1.0
    cases = [sp.csr_matrix((0, 0)), sp.csr_matrix((4, 3)), sp.csr_matrix(np.array([[2.5]])),
             arrow, sp.random(40, 900, density=0.05, random_state=1),
             sp.random(900, 40, density=0.05, random_state=2)]
    rng = np.random.default_rng(0)
    args = [(spmv.SpmvMatrix(M), rng.standard_normal(M.shape[1])) for M in cases]
    return args + spmv.make_inputs(6, seed=3, min_nnz=2_000, max_nnz=50_000)[0]


@pytest.mark.gpu
def test_cuda_variants_match_scipy(gpu):
    for dA, dx in spmv_cuda.inputs(host_inputs()):
        expected = dA.host.csr @ dx.get()
        bound = 1e-12 * (abs(dA.host.csr) @ np.abs(dx.get()))
        for name, fn in spmv_cuda.VARIANTS.items():
            y = fn(dA, dx)
            assert isinstance(y, gpu.GPUArray) and y.shape == (dA.shape[0],), name
            assert np.all(np.abs(y.get() - expected) <= bound), name


@pytest.mark.gpu
def test_cuda_bad_vector_is_named(gpu):
    dA = spmv_cuda.DeviceMatrix(sp.identity(5))
    with pytest.raises(ValueError, match="length 5"):
        spmv_cuda.csr_scalar(dA, gpu.zeros(4, np.float64))


@pytest.mark.gpu
def test_cuda_tune_and_dispatch(gpu):
    host, ids = spmv.make_inputs(8, seed=5, min_nnz=2_000, max_nnz=20_000)
    args = spmv_cuda.inputs(host)
    cv = spmv_cuda.make_code_variant()
    tuner = autotuner("spmv_cuda", policy=TimingPolicy(min_repeats=1, max_repeats=3, target_seconds=0.0),
                      progress=False)
    tuner.set_training_args(args, ids=ids)
    rows = tuner.measure(cv)
    assert all(r.best in spmv_cuda.VARIANT_NAMES for r in rows)
    assert not any("wrong" in reason for r in rows for reason in r.failed.values())
    cv.model = tuner.fit_rows(cv, rows)
    for dA, dx in args[:3]:
        assert np.allclose(cv(dA, dx).get(), dA.host.csr @ dx.get())


def test_features_and_constraints_are_the_cpu_family_s_without_a_gpu():
    arrow = sp.identity(50, format="lil")
    arrow[0, :] = 1.0
    dA = spmv_cuda.DeviceMatrix(arrow)           # nothing is uploaded before a variant runs
    cv = spmv_cuda.make_code_variant()
    assert cv.variant_names == spmv_cuda.VARIANT_NAMES and cv.default == "csr_vector"
    values = cv.compute_features(dA, None)
    assert values == [fn(dA.host) for fn in spmv.FEATURES.values()]
    assert cv.allowed(values) == {"csr_scalar": True, "csr_vector": True, "ell": False, "dia": False}
