"""CUDA SpMV variants: contract, constraints and input checks without a GPU; on a GPU, every
variant its constraint allows against SciPy, and tuning."""
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from nitro import TimingPolicy, _variants, autotuner, cuda
from nitro.benchmarks import spmv, spmv_cuda

REASON = spmv_cuda.unavailable()


@pytest.fixture(scope="module")
def gpu():
    """pycuda's gpuarray module with a live GPU, or a skip saying what is missing."""
    if REASON is not None:
        pytest.skip(f"no CUDA GPU here: {REASON}")
    from pycuda import gpuarray
    return gpuarray


def host_inputs():
    arrow = sp.identity(300, format="lil")
    arrow[7, :] = 1.0
    cases = [sp.csr_matrix((0, 0)), sp.csr_matrix((4, 3)), sp.csr_matrix(np.array([[2.5]])),
             arrow, sp.random(40, 900, density=0.05, random_state=1),
             sp.random(900, 40, density=0.05, random_state=2)]
    rng = np.random.default_rng(0)
    args = [(spmv.SpmvMatrix(M), rng.standard_normal(M.shape[1])) for M in cases]
    return args + spmv.make_inputs(6, seed=3, min_nnz=2_000, max_nnz=50_000)[0]


def allowed_variants(A) -> list[str]:
    """The variants the family's constraints let run on host matrix ``A`` (what tuning runs)."""
    cv = spmv_cuda.make_code_variant()
    allowed = cv.allowed(cv.compute_features(spmv_cuda.DeviceMatrix(A), None))
    return [name for name in spmv_cuda.VARIANT_NAMES if allowed[name]]


def test_dia_is_excluded_on_the_power_law_input_its_format_cannot_hold():
    """The power-law input s3-0004 (7,109 rows, 62,183 nonzeros) needs more DIA entries than
    MAX_PADDED_ENTRIES: the constraint excludes dia (and ell) there, so the GPU test runs only
    the CSR variants on it; calling dia anyway raises before any result is compared."""
    generated, ids = spmv.make_inputs(6, seed=3, min_nnz=2_000, max_nnz=50_000)   # the last six of host_inputs
    [A] = [A for (A, _), i in zip(generated, ids) if i == "s3-0004-power_law-7109x7109-62183"]
    assert allowed_variants(A) == ["csr_scalar", "csr_vector"]
    with pytest.raises(ValueError, match="DIA would store 88578140 entries .*over the limit"):
        A.dia
    # every (input, variant) pair the GPU test runs converts on the host
    for A, _ in host_inputs():
        for name in allowed_variants(A):
            getattr(A, {"csr_scalar": "csr", "csr_vector": "csr"}.get(name, name))


def _device_array(shape, dtype=np.float64, strides=None):
    """An object with a pycuda GPUArray's attributes (``gpudata``, ``dtype``, ``shape``,
    ``strides``), for the checks that need no GPU memory."""
    return SimpleNamespace(gpudata=0x7F0000000000, dtype=np.dtype(dtype), shape=shape,
                           strides=strides or (np.dtype(dtype).itemsize,))


def test_x_must_be_a_contiguous_float64_device_vector_of_the_right_length():
    spmv_cuda.check_x(5, _device_array((5,)))
    with pytest.raises(TypeError, match="GPUArray.*numpy.ndarray.*DeviceMatrix.vector"):
        spmv_cuda.check_x(5, np.zeros(5))
    with pytest.raises(ValueError, match="strided view.*strides \\(16,\\)"):
        spmv_cuda.check_x(5, _device_array((5,), strides=(16,)))   # what x[::2] of a GPUArray is
    with pytest.raises(ValueError, match="length 5"):
        spmv_cuda.check_x(5, _device_array((4,)))
    with pytest.raises(ValueError, match="float64"):
        spmv_cuda.check_x(5, _device_array((5,), np.float32))
    spmv_cuda.check_x(1, _device_array((1,), strides=(0,)))          # one element: any stride reads it


def test_variants_check_x_before_touching_the_gpu():
    A = spmv_cuda.DeviceMatrix(sp.identity(5, format="csr"))
    for fn in spmv_cuda.VARIANTS.values():
        with pytest.raises(TypeError, match="GPUArray"):
            fn(A, np.zeros(5))


def test_features_and_constraints_are_the_cpu_family_s_without_a_gpu():
    arrow = sp.identity(50, format="lil")
    arrow[0, :] = 1.0
    dA = spmv_cuda.DeviceMatrix(arrow)           # nothing is uploaded before a variant runs
    cv = spmv_cuda.make_code_variant()
    assert cv.variant_names == spmv_cuda.VARIANT_NAMES and cv.default == "csr_vector"
    values = cv.compute_features(dA, None)
    assert values == [fn(dA.host) for fn in spmv.FEATURES.values()]
    assert cv.allowed(values) == {"csr_scalar": True, "csr_vector": True, "ell": False, "dia": False}


@pytest.mark.gpu
def test_cuda_variants_match_scipy(gpu):
    """Each variant the constraints allow, on every input, against SciPy within a bound of
    1e-12 times the sum of absolute products."""
    for dA, dx in spmv_cuda.inputs(host_inputs()):
        x = spmv_cuda.to_host(dx)
        expected = dA.host.csr @ x
        bound = 1e-12 * (abs(dA.host.csr) @ np.abs(x))
        for name in allowed_variants(dA.host):
            y = spmv_cuda.VARIANTS[name](dA, dx)
            assert isinstance(y, gpu.GPUArray) and y.shape == (dA.shape[0],), name
            assert np.all(np.abs(spmv_cuda.to_host(y) - expected) <= bound), (name, dA.input_id)


@pytest.mark.gpu
def test_cuda_variants_give_nan_for_a_stored_zero_times_a_non_finite_x(gpu):
    """A stored zero times an inf or NaN is NaN in SciPy's CSR product; the DIA kernel skipped
    every zero (to skip padding) and gave a finite value. Banded with stored +0.0 and -0.0 and
    a diagonal stored in even rows only (padding in odd rows); exact values, compared exactly."""
    n = 700
    rows = np.concatenate([np.arange(n), np.arange(1, n), np.arange(0, n - 3, 2)])
    cols = np.concatenate([np.arange(n), np.arange(n - 1), np.arange(3, n, 2)])
    M = sp.csr_matrix((np.random.default_rng(5).integers(1, 5, rows.size).astype(float), (rows, cols)), shape=(n, n))
    M.data[::7], M.data[3::11] = 0.0, -0.0
    tiny = sp.csr_matrix((np.array([0.0, 1.0]), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))
    for matrix in (tiny, M):
        A = spmv.SpmvMatrix(matrix)
        zero_columns = np.unique(A.indices[A.data == 0])
        for value in (np.inf, -np.inf, np.nan, 1.0):
            x = np.arange(A.shape[1], dtype=float) % 5 - 2
            x[zero_columns] = value
            [(dA, dx)] = spmv_cuda.inputs([(A, x)])
            expected = A.csr @ x
            assert np.isfinite(value) or np.isnan(expected).any()
            for name in spmv_cuda.VARIANT_NAMES:
                y = spmv_cuda.to_host(spmv_cuda.VARIANTS[name](dA, dx))
                np.testing.assert_array_equal(y, expected, err_msg=f"{name}, x {value} at stored zeros")
                assert spmv_cuda.check(spmv_cuda.VARIANTS[name](dA, dx), expected), (name, value)


@pytest.mark.gpu
def test_cuda_refuses_a_strided_view(gpu):
    dA = spmv_cuda.DeviceMatrix(sp.identity(5))
    with cuda.on_device():
        x = gpu.to_gpu(np.arange(10.0))[::2]
        short = gpu.zeros(4, np.float64)
    with pytest.raises(ValueError, match="strided view"):
        spmv_cuda.csr_scalar(dA, x)
    with pytest.raises(ValueError, match="length 5"):
        spmv_cuda.csr_scalar(dA, short)


@pytest.mark.gpu
def test_cuda_variants_run_from_another_thread(gpu):
    """The primary context is made current in whichever thread calls a variant."""
    from concurrent.futures import ThreadPoolExecutor
    [(dA, dx)] = spmv_cuda.inputs(spmv.make_inputs(1, seed=4, min_nnz=2_000, max_nnz=5_000)[0])
    with ThreadPoolExecutor(2) as pool:
        ys = list(pool.map(lambda name: spmv_cuda.to_host(spmv_cuda.VARIANTS[name](dA, dx)), ["csr_scalar"] * 4))
    for y in ys:
        assert np.allclose(y, dA.host.csr @ spmv_cuda.to_host(dx))


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
    for row, (dA, _) in zip(rows, args):   # every allowed variant measured, none failed
        assert {v for v, t in row.times.items() if t is not None} == set(allowed_variants(dA.host)), row.failed
    cv.model = tuner.fit_rows(cv, rows)
    for dA, dx in args[:3]:
        assert np.allclose(spmv_cuda.to_host(cv(dA, dx)), dA.host.csr @ spmv_cuda.to_host(dx))


@pytest.fixture(scope="module")
def spmv_ptx(tmp_path_factory) -> str:
    """The PTX nvcc makes of ``spmv.cu`` (sm_90), or a skip without nvcc."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH")
    source = Path(__file__).resolve().parents[2] / "variants_cpp" / "spmv.cu"
    ptx = tmp_path_factory.mktemp("ptx") / "spmv.ptx"
    run = subprocess.run(["nvcc", "--ptx", "-std=c++17", "-arch=sm_90", "-o", str(ptx), str(source)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return ptx.read_text()


def kernel_body(ptx: str, name: str) -> str:
    body = ptx[ptx.index(name):]
    return body[:body.index("\n}")]


def test_csr_vector_steps_through_a_row_with_a_64_bit_index(spmv_ptx):
    """A warp's index into a row advances by 32 in 64 bits: an ``int`` would overflow for a row
    ending near 2^31 nonzeros (read in the PTX nvcc makes of ``spmv.cu``)."""
    steps = re.findall(r"add\.[su](32|64)\s+%\w+, %\w+, 32;", kernel_body(spmv_ptx, "csr_vector_kernel"))
    assert steps and set(steps) == {"64"}, steps


def test_dia_skips_padding_by_its_bits_not_by_a_float_compare(spmv_ptx):
    """DIA padding is +0.0 and a stored zero -0.0 (SpmvMatrix.dia): the kernel must test the
    value's bits, as a float compare (``v != 0.0``, setp.*.f64) also skips -0.0 and loses the
    NaN that CSR gives for a stored zero times an inf. Each value loaded is moved to an integer
    register and compared with 0 in 64 bits, and no f64 compare is left."""
    body = kernel_body(spmv_ptx, "dia_kernel")
    assert not re.findall(r"setp\.\w+\.f64", body)
    values = re.findall(r"ld\.global\.nc\.f64\s+(%fd\d+), \[%rd\d+\];\s+mov\.b64\s+(%rd\d+), (%fd\d+);"
                        r"\s+setp\.(?:eq|ne)\.[sub]64\s+%p\d+, (%rd\d+), 0;", body)
    assert values and all(v == moved and bits == tested for v, bits, moved, tested in values), body


def test_launchers_without_a_driver_say_that_none_is_installed(without_cuda_driver):
    """The runtime's "CUDA driver version is insufficient" where no driver is installed at all
    is completed with what is missing (no pointer is dereferenced: the launch fails first)."""
    launches = {"csr_scalar": lambda: _variants.spmv_cuda.csr_scalar(4, 8, 8, 8, 8, 8),
                "csr_vector": lambda: _variants.spmv_cuda.csr_vector(4, 8, 8, 8, 8, 8),
                "ell": lambda: _variants.spmv_cuda.ell(4, 1, 8, 8, 8, 8),
                "dia": lambda: _variants.spmv_cuda.dia(4, 4, 1, 8, 8, 8, 8)}
    for name, launch in launches.items():
        with pytest.raises(RuntimeError, match=rf"spmv_cuda\.{name}: .*no CUDA driver is installed here"):
            launch()
