"""Benchmark families: variants, input features and input generators of real computations.

Every family module ``nitro.benchmarks.<family>`` offers the same names, so that the demo,
``nitro bench variants``, the examples and the tests treat all families alike:

- ``VARIANTS``: ``{name: callable}``; every variant takes the same argument tuple.
- ``FEATURES``: ``{name: callable}``; input features computed from that argument tuple.
- ``reference(*args)``: the correct output (NumPy/SciPy or a plain implementation).
- ``baseline(*args)``: the NumPy/SciPy routine a user would call instead (timed against
  the tuned choice by ``nitro bench variants``).
- ``make_code_variant(name=...)``: a :class:`nitro.CodeVariant` with default, constraints and
  output check set.
- ``train_test_inputs(n_train, n_test, seed)``: ``((train_args, train_ids), (test_args, test_ids))``,
  deterministic for a seed; each item of ``*_args`` is the argument tuple of one call (a non-tuple item is the
  single argument).
"""
import importlib

FAMILIES = ["histogram", "spmv", "sort", "bfs", "solver", "transpose"]
# Families whose variants run on an NVIDIA GPU (pycuda GPUArray arguments); each offers
# ``unavailable() -> str | None`` saying why it cannot run here.
GPU_FAMILIES = ["histogram_cuda", "spmv_cuda"]


def load(family: str):
    """The module of one benchmark family, by name."""
    if family not in FAMILIES + GPU_FAMILIES:
        raise ValueError(f"unknown benchmark family {family!r}; known: {', '.join(FAMILIES + GPU_FAMILIES)}")
    return importlib.import_module(f"{__name__}.{family}")
