"""The store's errors, apart from the Redis client, so that catching them imports no Redis (the
command line's light paths, such as ``nitro bundle show``, run where only the run time is installed)."""
from __future__ import annotations


class StoreError(RuntimeError):
    """The store cannot be reached or holds something nitro cannot use."""


class StorePermissionError(StoreError):
    """The store's server refused a command the user's ACL does not allow (a reader writing)."""
