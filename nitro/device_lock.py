"""One nitro process times variants on a device at a time, on this machine.

Two tuners timing on one device at once (two ``tune()`` processes, a ``nitro record`` beside a
``tune_from_source`` measuring its few-shot inputs) each take the other's calls as their own
time: both record disturbed rows, and each may label the other's noise. So each input's timing
holds an exclusive lock (:mod:`nitro.file_lock`) on a lock file per device id in the temporary
folder, shared by every user of the machine (made readable by all; a lock file another user
created is opened read-only, which ``flock`` allows); a second process waits for the input being
timed, so the two interleave input by input, and says once that it waits. The lock ends with its
process, even killed, and a child forked while it is held (a variant's pool) does not keep it.
``TimingPolicy(exclusive=False)`` leaves it out (processes pinned to disjoint cores).
"""
from __future__ import annotations

import contextlib
import hashlib
import re
import tempfile
import threading
import warnings
from pathlib import Path

from .file_lock import FileLock

_held = threading.local()    # the devices this thread holds (a nested measurement does not wait on itself)
_warned: set[str] = set()    # the devices this process has said it waits for (once each: Python's own
                             # once-per-place rule forgets whenever a warnings filter changes)


class DeviceBusyWarning(RuntimeWarning):
    """Another process is timing on the same device; this one waits for it."""


def lock_path(device_id: str) -> Path:
    """The lock file of ``device_id``: readable name, with a digest so that no two ids share one."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", device_id)[:80]
    digest = hashlib.sha1(device_id.encode()).hexdigest()[:8]
    return Path(tempfile.gettempdir()) / f"nitro-timing-{safe}-{digest}.lock"


@contextlib.contextmanager
def timing_on(device_id: str):
    """Hold ``device_id``'s timing lock for the block, waiting (with one warning) while another
    process holds it."""
    held = getattr(_held, "devices", None)
    if held is None:
        held = _held.devices = set()
    if device_id in held:
        yield
        return
    try:
        lock = FileLock(lock_path(device_id), all_users=True,
                        keeps_out=f"another process timing variants on {device_id}")
    except OSError:           # cannot be opened at all (not POSIX, another user's unreadable file): no lock
        yield
        return
    with lock:
        if not lock.try_lock():
            _warn_waiting(lock.holder(), device_id)
            lock.lock()
        held.add(device_id)
        try:
            yield
        finally:
            held.discard(device_id)


def timing_for(device_id: str, exclusive: bool = True):
    """:func:`timing_on` where ``exclusive`` (a timing policy's), else a block that waits for nothing."""
    return timing_on(device_id) if exclusive else contextlib.nullcontext()


def _warn_waiting(who: str, device_id: str) -> None:
    """Say, the first time in this process for ``device_id``, that ``who`` holds it."""
    if device_id in _warned:
        return
    _warned.add(device_id)
    warnings.warn(f"{who} is timing variants on "
                  f"{device_id}: waiting for each of its inputs to end before timing one of this process's, "
                  "so that neither disturbs the other's timings (TimingPolicy(exclusive=False) does not wait)",
                  DeviceBusyWarning, stacklevel=4)
