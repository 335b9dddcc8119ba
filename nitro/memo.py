"""Results kept by the content they were computed from, within a run that computes the same
ones many times (``nitro evaluate``: the full-set SVM of target t with source s held out is the
one of target s with t held out; every target with the same training inputs has the same
input-kernel basis). Outside :func:`kept` nothing is kept, so one-off callers hold no memory."""
from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from typing import Callable, TypeVar

import numpy as np

T = TypeVar("T")
_kept: dict[str, OrderedDict] | None = None
_lock = threading.Lock()


def hash_array(digest, a: np.ndarray) -> None:
    """Feed an array's dtype, shape and bytes to a ``hashlib`` digest (input ids, in-place checks,
    kept results)."""
    digest.update(str((a.dtype.str, a.shape)).encode())
    digest.update(np.ascontiguousarray(a).view(np.uint8).data)


def content_key(*parts) -> bytes:
    """A digest of ``parts``: arrays by their content, anything else by its ``repr``."""
    digest = hashlib.blake2b(digest_size=16)
    for p in parts:
        if isinstance(p, np.ndarray):
            hash_array(digest, p)
        else:
            digest.update(f"|{p!r}|".encode())
    return digest.digest()


@contextlib.contextmanager
def kept():
    """Keep what :func:`recall` computes inside (each kind up to its ``limit``), and nothing after."""
    global _kept
    outer, _kept = _kept, {} if _kept is None else _kept
    try:
        yield
    finally:
        _kept = outer


def recall(kind: str, key: bytes, compute: Callable[[], T], limit: int) -> T:
    """``compute()``, or within :func:`kept` the value it gave for this ``kind`` and ``key``
    before (the least recently used beyond ``limit`` of a kind are dropped). ``compute`` must be
    deterministic and its value never changed in place: a kept value is the one a rerun gives."""
    store = _kept
    if store is None:
        return compute()
    with _lock:
        entries = store.setdefault(kind, OrderedDict())
        if key in entries:
            entries.move_to_end(key)
            return entries[key]
    value = compute()
    with _lock:
        entries[key] = value
        while len(entries) > limit:
            entries.popitem(last=False)
    return value
