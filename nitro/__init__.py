"""nitro: learn which code variant is fastest for an input on a device — including devices
it has never trained on — and dispatch it at run time.

Importing nitro loads only the run time (code variants, models and the compiled evaluator; not
even NumPy, which only batch evaluation and the tuning side use). The tuning side — the store
(Redis), the autotuner and its learners (scikit-learn) — is imported on first use of its names,
so an application that only dispatches starts fast and never starts a server.
"""
from importlib import import_module

from . import forksafe  # noqa: F401  (OpenMP-safe os.fork for the whole process)
from .model import SelectorModel
from .variant import CodeVariant, code_variant

# name -> module that defines it, imported when the name is first used
_LAZY = {"TimingPolicy": ".measurement", "Store": ".store", "StoreError": ".store",
         "Autotuner": ".tuner", "autotuner": ".tuner", "Bundle": ".bundle", "load_bundle": ".bundle"}

__all__ = ["code_variant", "autotuner", "CodeVariant", "Autotuner", "Store", "StoreError",
           "SelectorModel", "TimingPolicy", "Bundle", "load_bundle"]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'nitro' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
