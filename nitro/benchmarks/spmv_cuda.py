"""CUDA SpMV variants (CSR scalar, CSR vector = a warp per row, ELL, DIA) through pycuda.

pycuda is the optional extra ``gpu`` and is imported on first use. Inputs are
``(DeviceMatrix, x_gpu)``: the matrix's formats are uploaded to the GPU on first use and
kept there, ``x_gpu`` is a contiguous float64 ``pycuda.gpuarray.GPUArray``; a variant returns
``y`` as a new GPUArray taken from a memory pool (no ``cuMemAlloc`` per call once warm). The
kernels get the arrays' device pointers, so nothing is copied per call. Every call makes the
device's primary context current in the calling thread (:func:`nitro.cuda.on_device`), the
context the CUDA runtime in ``nitro._variants`` uses too.
"""
from __future__ import annotations

import importlib.util
from contextlib import contextmanager

import numpy as np

from .. import _variants, cuda
from ..measurement import outputs_match
from ..devices.gpu import cuda_device_id
from ..variant import CodeVariant, code_variant
from . import spmv

VARIANT_NAMES = ["csr_scalar", "csr_vector", "ell", "dia"]


unavailable = cuda.variants_unavailable   # None when the family can run here, else why not


@contextmanager
def gpuarray():
    """pycuda's gpuarray module, for a block run with the primary context current in this
    thread; an ImportError/RuntimeError saying what is missing."""
    if not _variants.HAVE_CUDA:
        raise RuntimeError("nitro was built without CUDA variants (no nvcc when it was built)")
    if importlib.util.find_spec("pycuda") is None:
        raise ImportError("the CUDA SpMV variants need pycuda: pip install 'nitro[gpu]'")
    with cuda.on_device():
        from pycuda import gpuarray as module
        yield module


def _ptr(array) -> int:
    """Device address of a GPUArray (0 for an empty one, which no kernel reads)."""
    return int(array.gpudata) if array.size else 0


class DeviceMatrix:
    """An :class:`~nitro.benchmarks.spmv.SpmvMatrix` with its formats uploaded to the GPU
    on first use (the host conversions are cached by the SpmvMatrix itself)."""

    def __init__(self, matrix):
        self.host = spmv.as_matrix(matrix)
        self._arrays: dict[str, tuple] = {}

    @property
    def shape(self):
        return self.host.shape

    @property
    def input_id(self) -> str:
        return self.host.input_id

    def _upload(self, fmt: str, arrays) -> tuple:
        if fmt not in self._arrays:
            with gpuarray() as ga:
                pool = cuda.memory_pool()
                self._arrays[fmt] = tuple(ga.to_gpu(np.ascontiguousarray(a), allocator=pool.allocate) for a in arrays)
        return self._arrays[fmt]

    @property
    def csr(self):
        return self._upload("csr", (self.host.indptr, self.host.indices, self.host.data))

    @property
    def ell(self):
        return self._upload("ell", self.host.ell)

    @property
    def dia(self):
        return self._upload("dia", self.host.dia)

    def vector(self, x):
        """``x`` (host array) checked and copied to the GPU."""
        with gpuarray() as ga:
            return ga.to_gpu(self.host.vector(x), allocator=cuda.memory_pool().allocate)


def check_x(n_cols: int, x) -> None:
    """Refuse an ``x`` the kernels would misread: not a device array (a NumPy array), not
    float64, not of length ``n_cols``, or a strided view (the kernels read ``x[i]`` at
    ``gpudata + 8 i``: a view such as ``x[::2]`` would silently give a wrong ``y``)."""
    if isinstance(x, np.ndarray) or not hasattr(x, "gpudata"):
        raise TypeError(f"x must be a pycuda GPUArray on the GPU, got {type(x).__module__}.{type(x).__name__}; "
                        "upload a host vector with DeviceMatrix.vector(x)")
    if x.dtype != np.float64 or tuple(x.shape) != (n_cols,):
        raise ValueError(f"x must be a float64 GPUArray of length {n_cols}, got {x.dtype} of shape {tuple(x.shape)}")
    if n_cols > 1 and tuple(x.strides) != (8,):
        raise ValueError(f"x must be contiguous (strides (8,)), got a strided view with strides {tuple(x.strides)}; "
                         "pass x.copy()")


def _launch(name: str, A: DeviceMatrix, x, arguments):
    """Check ``x``, then run kernel ``name`` with ``arguments(A)`` (sizes and ``A``'s device
    arrays, uploaded on first use) into a pooled ``y``; return ``y``."""
    check_x(A.shape[1], x)
    with gpuarray() as ga:
        y = ga.empty(A.shape[0], np.float64, allocator=cuda.memory_pool().allocate)
        args = [_ptr(a) if hasattr(a, "gpudata") else a for a in arguments(A)]
        getattr(_variants.spmv_cuda, name)(A.shape[0], *args, _ptr(x), _ptr(y))
    return y


def csr_scalar(A: DeviceMatrix, x):
    """CSR, a thread per row."""
    return _launch("csr_scalar", A, x, lambda A: A.csr)


def csr_vector(A: DeviceMatrix, x):
    """CSR, a warp per row (coalesced reads of long rows)."""
    return _launch("csr_vector", A, x, lambda A: A.csr)


def ell(A: DeviceMatrix, x):
    """ELLPACK, a thread per row over column-major slots."""
    return _launch("ell", A, x, lambda A: (A.ell[0].shape[0], *A.ell))


def dia(A: DeviceMatrix, x):
    """DIA, a thread per row over the occupied diagonals."""
    return _launch("dia", A, x, lambda A: (A.shape[1], A.dia[0].shape[0], *A.dia))


VARIANTS = {name: globals()[name] for name in VARIANT_NAMES}


def reference(A: DeviceMatrix, x) -> np.ndarray:
    """SciPy's product on the host (x copied back)."""
    return A.host.csr @ to_host(x)


to_host = cuda.to_host   # a GPUArray's contents as a NumPy array, from any thread

# What a SciPy user would do is the reference itself: copy x to the host, SciPy's product.
baseline = reference


def check(result, expected) -> bool:
    """Compares a variant's GPUArray with the host reference."""
    return outputs_match(to_host(result), expected)


def _on_host(feature):
    def f(A: DeviceMatrix, x=None) -> float:
        return feature(A.host)
    f.__name__ = feature.__name__
    return f


FEATURES = {name: _on_host(fn) for name, fn in spmv.FEATURES.items()}


def inputs(host_args) -> list[tuple]:
    """``(DeviceMatrix, x_gpu)`` for each host ``(A, x)`` (e.g. from spmv.train_test_inputs)."""
    out = []
    for A, x in host_args:
        dA = DeviceMatrix(A)
        out.append((dA, dA.vector(x)))
    return out


def train_test_inputs(n_train: int = 48, n_test: int = 48, seed: int = 0):
    """The CPU family's matrices and vectors (same ids), uploaded to the GPU."""
    (train, train_ids), (test, test_ids) = spmv.train_test_inputs(n_train, n_test, seed)
    return (inputs(train), train_ids), (inputs(test), test_ids)


def make_code_variant(name: str = "spmv_cuda") -> CodeVariant:
    """The family's code variant; on a machine with a usable GPU its ``device_id`` is that
    GPU's id, so training rows are recorded under the GPU (not the CPU)."""
    constraints = [(v, c) for v, c in spmv.CONSTRAINTS if v in VARIANTS]
    cv = code_variant(name, VARIANTS, FEATURES, default="csr_vector", constraints=constraints,
                      reference=reference, check=check)
    cv.device_id = cuda_device_id()
    return cv
