"""nitro: learn which code variant is fastest for an input on a device — including devices
it has never trained on — and dispatch it at run time."""
from . import forksafe  # noqa: F401  (OpenMP-safe os.fork for the whole process)
from .measurement import TimingPolicy
from .model import SelectorModel
from .store import Store, StoreError
from .tuner import Autotuner, autotuner
from .variant import CodeVariant, code_variant

__all__ = ["code_variant", "autotuner", "CodeVariant", "Autotuner", "Store", "StoreError",
           "SelectorModel", "TimingPolicy"]
