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
import importlib.util
import sys
from pathlib import Path

FAMILIES = ["histogram", "spmv", "sort", "bfs", "solver", "transpose"]
# Families whose variants run on an NVIDIA GPU (pycuda GPUArray arguments); each offers
# ``unavailable() -> str | None`` saying why it cannot run here.
GPU_FAMILIES = ["histogram_cuda", "spmv_cuda"]
# what recording, profiling and training benchmarks call; ``nitro bench variants`` also ``baseline``
NEEDS = ("make_code_variant", "train_test_inputs")


def load(family: str, needs: tuple[str, ...] = NEEDS):
    """The module of one family: one of nitro's by name, or a user's own module that offers the
    same names (``needs`` of them at least), by its import name (``mylib.tuning.sumsq``) or its
    file (``tuning/sumsq.py``), so that ``nitro record`` and the benchmarks time it too."""
    if family in FAMILIES + GPU_FAMILIES:
        return importlib.import_module(f"{__name__}.{family}")
    if family.endswith(".py"):
        module = _from_file(Path(family))
    elif "." in family and all(part.isidentifier() for part in family.split(".")):
        try:
            module = importlib.import_module(family)
        except ModuleNotFoundError as exc:
            raise ValueError(f"family module {family!r} cannot be imported ({exc}): is its package installed, "
                             "or on PYTHONPATH?") from None
    else:
        raise ValueError(f"unknown benchmark family {family!r}; known: {', '.join(FAMILIES + GPU_FAMILIES)}; "
                         "a family of your own: its module's import name (mylib.tuning.sumsq) or its .py file")
    missing = [name for name in needs if not callable(getattr(module, name, None))]
    if missing:
        raise ValueError(f"{family!r} is not a family module: it has no {', '.join(missing)} "
                         f"(the names nitro.benchmarks' docstring lists)")
    return module


def _from_file(path: Path):
    """A family module read from its file, importable afterwards under its file name (workers and
    pickles find its functions)."""
    if not path.is_file():
        raise ValueError(f"family file {str(path)!r} does not exist")
    name = path.stem
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path.resolve()):
        return sys.modules[name]
    if name in sys.modules or not name.isidentifier():
        raise ValueError(f"family file {str(path)!r}: its name {name!r} is taken by another module or is no "
                         "Python name; rename the file")
    spec = importlib.util.spec_from_file_location(name, path.resolve())
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
