"""An exclusive ``flock`` on a lock file, with its holder's pid written in it for messages: the
one lock behind a recording folder (:mod:`nitro.record`), a device's timing
(:mod:`nitro.device_lock`) and the embedded store's server (:mod:`nitro.store.embedded`).

``flock`` belongs to the open file description: the kernel lets it go when its process ends,
even killed, and two threads that each open the file exclude each other as two processes do.
What a copy of the descriptor would break is handled here: the file is opened ``O_CLOEXEC``
(no program a holder runs keeps it), and a child forked while a lock is held (a measurement
worker, a variant's ``multiprocessing`` pool) closes its copy at once, so the lock still ends
with its holder's release or death; a release unlocks first, so a copy left by a fork in C
cannot keep it either. Standard library only: the store's watchdog loads this file by its path.
On NFS, Linux emulates ``flock`` with ``fcntl`` locks on the server: an exclusive lock then
needs the file opened for writing; where the file system cannot lock at all (NFS without its lock
service: ``ENOLCK``), the lock is taken as granted with a :class:`LockUnavailableWarning` naming
the file and what is no longer kept out, rather than an error that would stop every recording,
timing or store on such a home folder.
"""
from __future__ import annotations

import errno
import os
import time
import warnings
import weakref
from pathlib import Path

try:
    import fcntl
except ImportError:        # not POSIX: no lock can be opened (nitro's measurement is Linux-first)
    fcntl = None

POLL_S = 0.02              # seconds between two tries of a lock waited for with a time limit
_PID_WIDTH = 12            # the holder's pid, padded: rewritten in place, never an empty file
_live: "weakref.WeakSet[FileLock]" = weakref.WeakSet()    # open in this process: closed in a fork's child
_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS}  # the file system cannot lock
_warned: set[str] = set()                                  # lock files already warned about in this process


class LockUnavailableWarning(RuntimeWarning):
    """The file system of a lock file cannot lock: nitro goes on without the lock."""


class FileLock:
    """An exclusive lock on ``path`` (created if missing), one object per use: :meth:`try_lock`
    or :meth:`lock`, then :meth:`release` (or use it as a context manager, which releases).
    ``all_users``: a lock shared by every user of the machine (in the temporary folder): the
    file is made readable by all, and one another user created is opened read-only (``flock``
    needs no more), its holder's pid then unknown. ``keeps_out``: what the lock keeps out, for
    the warning where the file system cannot lock. Opening raises :class:`OSError` where the
    file cannot be opened at all."""

    def __init__(self, path, all_users: bool = False, keeps_out: str = "another nitro process"):
        self.path, self.locked, self.keeps_out = Path(path), False, keeps_out
        self._owner = os.getpid()
        self._fd, self.writable = self._open(self.path, all_users)
        _live.add(self)

    @staticmethod
    def _open(path: Path, all_users: bool) -> tuple[int, bool]:
        if fcntl is None:
            raise OSError(errno.ENOLCK, "no flock on this system", str(path))
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644 if all_users else 0o666)
        except PermissionError:
            if not all_users:
                raise
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC), False
        if all_users:                 # a umask of 077 would keep every other user out
            stat = os.fstat(fd)
            if stat.st_uid == os.geteuid() and stat.st_mode & 0o044 != 0o044:
                os.fchmod(fd, stat.st_mode | 0o044)
        return fd, True

    def try_lock(self) -> bool:
        """Take the lock if no one holds it; whether it was taken."""
        return self._flock(fcntl.LOCK_EX | fcntl.LOCK_NB)

    def lock(self, timeout: float | None = None) -> bool:
        """Take the lock, waiting for its holder as long as it takes (``timeout`` None) or at most
        ``timeout`` seconds; whether it was taken."""
        if timeout is None:
            return self._flock(fcntl.LOCK_EX)
        deadline = time.monotonic() + timeout
        while not self.try_lock():
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)
        return True

    def _flock(self, operation: int) -> bool:
        """``flock(operation)``: False where another holds the lock (non-blocking), else taken,
        or granted with a warning where the file system cannot lock."""
        try:
            fcntl.flock(self._fd, operation)
        except BlockingIOError:
            return False
        except OSError as e:
            if e.errno not in _UNSUPPORTED:
                raise
            self._unlockable(e)
        self._taken()
        return True

    def _unlockable(self, error: OSError) -> None:
        """Warn, once per file in this process, that its file system cannot lock."""
        if str(self.path) in _warned:
            return
        _warned.add(str(self.path))
        warnings.warn(f"{self.path}: its file system cannot lock files ({error.strerror or error}; NFS without "
                      f"its lock service?); going on without the lock, so {self.keeps_out} at the same time is "
                      "not kept out. Put this file on a local disk to have it.", LockUnavailableWarning, stacklevel=4)

    def _taken(self) -> None:
        self.locked = True
        if self.writable:             # padded and then cut: a reader never finds the file empty
            os.pwrite(self._fd, f"{os.getpid():<{_PID_WIDTH - 1}}\n".encode(), 0)
            os.ftruncate(self._fd, _PID_WIDTH)

    def holder(self) -> str:
        """Who holds the lock, for a message: ``another process (pid N)``, ``another thread of
        this process``, or ``another process`` where no pid is written."""
        pid = os.pread(self._fd, 32, 0).decode(errors="replace").strip() if self.writable else ""
        if pid == str(os.getpid()):
            return "another thread of this process"
        return f"another process (pid {pid})" if pid.isdigit() else "another process"

    def release(self) -> None:
        """Let the lock go (in the process that took it) and close the file; again, nothing."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self.locked and self._owner == os.getpid():
                try:
                    fcntl.flock(fd, fcntl.LOCK_UN)     # before closing: no copy of the descriptor keeps it
                except OSError as e:
                    if e.errno not in _UNSUPPORTED:    # never locked where the file system cannot lock
                        raise
        finally:
            self.locked = False
            os.close(fd)
            _live.discard(self)

    def _forget(self) -> None:
        """In a forked child: close this process's copy without unlocking the parent's lock."""
        if self._fd is not None:
            fd, self._fd, self.locked = self._fd, None, False
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> "FileLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _after_fork_in_child() -> None:
    for held in list(_live):
        held._forget()
    _live.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
