"""The store's key schema (version 1): one place that names every Redis key nitro uses.

Layout, with ``{c}`` the escaped computation name (a Redis Cluster hash tag, so that all
keys of one computation live on one shard) and ``d`` an escaped device id::

    nitro:schema                       "1"
    nitro:computations                 set of computation names
    nitro:devices                      set of device ids with a record (nitro:device:<d>)
    nitro:device:<d>                   hash  name -> JSON {"value", "unit", "source"}
    nitro:device_metadata:<d>          hash  name -> JSON string (vendor, kind, arch: never features)
    nitro:{c}:meta                     hash  "variants", "features" -> JSON lists
    nitro:{c}:devices                  set of device ids with training rows
    nitro:{c}:rows:<d>                 hash  input id -> JSON training row
    nitro:{c}:model:<d>                JSON model (plain data, never pickle)
    nitro:{c}:profiles:<d>             hash  "<variant>|<input id>" -> JSON metrics
    nitro:proxy_profiles:<d>           hash  "<proxy>|<intensity>" -> JSON metrics

User-supplied names are percent-escaped so that no name can forge a separator (``:``),
a hash tag (``{``/``}``), or a glob character and so reach another computation's keys.
"""
from __future__ import annotations

from urllib.parse import quote

SCHEMA_VERSION = 1
PREFIX = "nitro"


def escape(name: str) -> str:
    """Escape a user-supplied name for use inside a key."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"names in the store must be non-empty strings, got {name!r}")
    return quote(name, safe="")


def schema() -> str:
    return f"{PREFIX}:schema"


def computations() -> str:
    return f"{PREFIX}:computations"


def device(device_id: str) -> str:
    return f"{PREFIX}:device:{escape(device_id)}"


def device_metadata(device_id: str) -> str:
    return f"{PREFIX}:device_metadata:{escape(device_id)}"


def devices_with_features() -> str:
    return f"{PREFIX}:devices"


def _comp(computation: str) -> str:
    return f"{PREFIX}:{{{escape(computation)}}}"


def of_computation(computation: str) -> str:
    """A SCAN pattern matching every key of ``computation`` (escaped names hold no glob character)."""
    return f"{_comp(computation)}:*"


def meta(computation: str) -> str:
    return f"{_comp(computation)}:meta"


def computation_devices(computation: str) -> str:
    return f"{_comp(computation)}:devices"


def rows(computation: str, device_id: str) -> str:
    return f"{_comp(computation)}:rows:{escape(device_id)}"


def model(computation: str, device_id: str) -> str:
    return f"{_comp(computation)}:model:{escape(device_id)}"


def profiles(computation: str, device_id: str) -> str:
    return f"{_comp(computation)}:profiles:{escape(device_id)}"


def proxy_profiles(device_id: str) -> str:
    return f"{PREFIX}:proxy_profiles:{escape(device_id)}"
