"""Training data, device features, profiles and models in Redis (see :mod:`nitro.store.keys`).
``Store``, ``connect`` and ``default_data_dir`` are imported on first use: they need the Redis
client, which the run time (bundles, dispatch) does not."""
from .errors import StoreError, StorePermissionError

__all__ = ["Store", "StoreError", "StorePermissionError", "connect", "default_data_dir"]


def __getattr__(name: str):
    if name == "Store":
        from .redis_store import Store
        return Store
    if name in ("connect", "default_data_dir"):
        from . import connection
        return getattr(connection, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
