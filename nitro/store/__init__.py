"""Training data, device features, profiles and models in Redis (see :mod:`nitro.store.keys`)."""
from .connection import StoreError, StorePermissionError, connect, default_data_dir
from .redis_store import Store

__all__ = ["Store", "StoreError", "StorePermissionError", "connect", "default_data_dir"]
