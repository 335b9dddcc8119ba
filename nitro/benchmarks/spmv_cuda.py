"""CUDA SpMV variants (CSR scalar, CSR vector = a warp per row, ELL, DIA) through pycuda.

pycuda is the optional extra ``gpu`` and is imported on first use. Inputs are
``(DeviceMatrix, x_gpu)``: the matrix's formats are uploaded to the GPU on first use and
kept there, ``x_gpu`` is a ``pycuda.gpuarray.GPUArray``; a variant returns ``y`` as a new
GPUArray. The kernels get the arrays' device pointers, so nothing is copied per call. The
pycuda context is the device's primary context, the one the CUDA runtime in
``nitro._variants`` uses too.
"""
from __future__ import annotations

import importlib.util

import numpy as np

from .. import _variants, cuda
from ..measurement import outputs_match
from ..variant import CodeVariant, code_variant
from . import spmv

VARIANT_NAMES = ["csr_scalar", "csr_vector", "ell", "dia"]


unavailable = cuda.variants_unavailable   # None when the family can run here, else why not


def gpuarray():
    """pycuda's gpuarray module on a live primary context, or an ImportError/RuntimeError
    saying what is missing."""
    if not _variants.HAVE_CUDA:
        raise RuntimeError("nitro was built without CUDA variants (no nvcc when it was built)")
    if importlib.util.find_spec("pycuda") is None:
        raise ImportError("the CUDA SpMV variants need pycuda: pip install 'nitro[gpu]'")
    try:
        import pycuda.autoprimaryctx  # noqa: F401  (makes the primary context current)
        from pycuda import gpuarray as module
    except Exception as exc:  # no driver library (ImportError) or no device (pycuda's errors)
        raise RuntimeError(f"no usable CUDA driver or device: {type(exc).__name__}: {exc}") from None
    return module


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
            ga = gpuarray()
            self._arrays[fmt] = tuple(ga.to_gpu(np.ascontiguousarray(a)) for a in arrays)
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
        return gpuarray().to_gpu(self.host.vector(x))


def _check_x(A: DeviceMatrix, x):
    if x.dtype != np.float64 or x.shape != (A.shape[1],):
        raise ValueError(f"x must be a float64 GPUArray of length {A.shape[1]}, "
                         f"got {x.dtype} of shape {x.shape}")
    return gpuarray().empty(A.shape[0], np.float64)


def csr_scalar(A: DeviceMatrix, x):
    """CSR, a thread per row."""
    y = _check_x(A, x)
    indptr, indices, data = A.csr
    _variants.spmv_cuda.csr_scalar(A.shape[0], _ptr(indptr), _ptr(indices), _ptr(data), _ptr(x), _ptr(y))
    return y


def csr_vector(A: DeviceMatrix, x):
    """CSR, a warp per row (coalesced reads of long rows)."""
    y = _check_x(A, x)
    indptr, indices, data = A.csr
    _variants.spmv_cuda.csr_vector(A.shape[0], _ptr(indptr), _ptr(indices), _ptr(data), _ptr(x), _ptr(y))
    return y


def ell(A: DeviceMatrix, x):
    """ELLPACK, a thread per row over column-major slots."""
    y = _check_x(A, x)
    indices, data = A.ell
    _variants.spmv_cuda.ell(A.shape[0], indices.shape[0], _ptr(indices), _ptr(data), _ptr(x), _ptr(y))
    return y


def dia(A: DeviceMatrix, x):
    """DIA, a thread per row over the occupied diagonals."""
    y = _check_x(A, x)
    offsets, data = A.dia
    _variants.spmv_cuda.dia(A.shape[0], A.shape[1], offsets.shape[0], _ptr(offsets), _ptr(data),
                            _ptr(x), _ptr(y))
    return y


VARIANTS = {name: globals()[name] for name in VARIANT_NAMES}


def reference(A: DeviceMatrix, x) -> np.ndarray:
    """SciPy's product on the host (x copied back)."""
    return A.host.csr @ x.get()


# What a SciPy user would do is the reference itself: copy x to the host, SciPy's product.
baseline = reference


def check(result, expected) -> bool:
    """Compares a variant's GPUArray with the host reference."""
    return outputs_match(result.get(), expected)


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
    cv.device_id = cuda.device_id()
    return cv
