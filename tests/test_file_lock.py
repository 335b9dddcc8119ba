"""nitro.file_lock with real processes and threads: a lock ends with its holder (even killed),
threads exclude each other, and no child the holder forked or started keeps it."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from nitro.file_lock import FileLock

ROOT = Path(__file__).resolve().parents[1]
HOLDER = """
import os, subprocess, sys, time
sys.path.insert(0, sys.argv[3])
from nitro.file_lock import FileLock
lock = FileLock(sys.argv[1])
assert lock.try_lock()
if sys.argv[2] == "fork" and os.fork() == 0:     # a child that outlives its parent, as a pool's may
    time.sleep(60)
    os._exit(0)
if sys.argv[2] == "spawn":                        # a program started while holding it
    subprocess.Popen(["sleep", "60"])
print(os.getpid(), flush=True)
time.sleep(60)
"""


def _holder(path, child="none"):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), child, str(ROOT)], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    assert proc.stdout.readline().strip() == str(proc.pid)
    return proc


def _end_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)      # the holder's children too (they are in its session)
    except ProcessLookupError:
        pass
    proc.wait(30)
    proc.stdout.close()


@pytest.mark.parametrize("child", ["none", "fork", "spawn"])
def test_a_killed_holder_leaves_the_lock_free_whatever_it_started(tmp_path, child):
    """Before 2026-11-28 a child forked under a lock kept it after its holder was killed: a
    second recording, tuner or store start then waited on, or was refused by, a dead pid."""
    path = tmp_path / "x.lock"
    proc = _holder(path, child)
    try:
        with FileLock(path) as lock:
            assert not lock.try_lock() and lock.holder() == f"another process (pid {proc.pid})"
            assert not lock.lock(timeout=0.1)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
            assert lock.lock(timeout=30), f"the lock outlived its holder (child: {child})"
    finally:
        _end_group(proc)


def test_a_child_forked_under_the_lock_does_not_hold_it_after_the_release(tmp_path):
    """A variant's multiprocessing pool made while a device was timed held its lock after the
    timing: the next timing of the same process then waited for itself forever."""
    path = tmp_path / "x.lock"
    with FileLock(path) as lock:
        assert lock.try_lock()
        r, w = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(r)
            os.write(w, b"1")
            time.sleep(30)
            os._exit(0)
        os.close(w)
        assert os.read(r, 1) == b"1"
    try:
        with FileLock(path) as again:
            assert again.try_lock(), "the forked child kept the lock after its parent let it go"
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_threads_of_one_process_exclude_each_other(tmp_path):
    path = tmp_path / "x.lock"
    inside, done = threading.Event(), threading.Event()

    def hold():
        with FileLock(path) as lock:
            assert lock.try_lock()
            inside.set()
            done.wait(30)
    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(30)
    with FileLock(path) as lock:
        assert not lock.try_lock() and lock.holder() == "another thread of this process"
        done.set()
        thread.join(30)
        assert lock.try_lock()


def test_the_holders_pid_replaces_what_the_file_held(tmp_path):
    path = tmp_path / "x.lock"
    path.write_text("123456789012345678901234567890\n")
    with FileLock(path) as lock:
        assert lock.try_lock() and lock.lock(timeout=0)      # taken, and taking it again here is no wait
        assert path.read_text().strip() == str(os.getpid())
    with FileLock(path) as lock:
        lock.release()
        lock.release()           # twice: nothing


def test_a_lock_for_all_users_is_readable_by_all_whatever_the_umask(tmp_path):
    """Under a umask of 077 the device lock's file was the creator's alone: another user's tuner
    could not open it and timed beside the first without a word."""
    old = os.umask(0o077)
    try:
        with FileLock(tmp_path / "all.lock", all_users=True), FileLock(tmp_path / "mine.lock"):
            pass
    finally:
        os.umask(old)
    assert (tmp_path / "all.lock").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "mine.lock").stat().st_mode & 0o777 == 0o600


OTHER_USER = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("file_lock", sys.argv[1])
file_lock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(file_lock)
lock = file_lock.FileLock(sys.argv[2], all_users=True)
if sys.argv[3] == "hold":
    import os
    assert lock.try_lock()
    print("held", flush=True)
    time.sleep(60)
print(lock.writable, lock.try_lock(), lock.holder(), flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
                    reason="needs root (to run as two other users) and a system python3 they can run")
def test_two_users_exclude_each_other_under_a_umask_of_077():
    """The second user opens the first's lock file read-only and is refused the lock."""
    top = Path(tempfile.mkdtemp())       # pytest's own folders are root's alone
    try:
        top.chmod(0o755)
        folder = top / "shared"
        folder.mkdir()
        folder.chmod(0o1777)             # a temporary folder's mode
        (top / "other.py").write_text(OTHER_USER)
        shutil.copy(ROOT / "nitro" / "file_lock.py", top / "file_lock.py")
        for name in ("other.py", "file_lock.py"):
            (top / name).chmod(0o644)

        def as_user(uid, role):
            return subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "/bin/sh", "-c",
                                     'umask 077; exec /usr/bin/python3 "$@"', "sh", str(top / "other.py"),
                                     str(top / "file_lock.py"), str(folder / "x.lock"), role],
                                    stdout=subprocess.PIPE, text=True)
        holder = as_user(65534, "hold")
        try:
            assert holder.stdout.readline().strip() == "held"
            out, _ = as_user(1, "try").communicate(timeout=60)
            assert out.split()[:2] == ["False", "False"], out      # opened read-only, and the lock refused
        finally:
            holder.kill()
            holder.wait(30)
            holder.stdout.close()
    finally:
        shutil.rmtree(top)


class _NoLocks:
    """fcntl as on NFS without its lock service: every flock fails with ENOLCK."""
    LOCK_EX, LOCK_NB, LOCK_UN = 2, 4, 8

    @staticmethod
    def flock(fd, op):
        import errno
        raise OSError(errno.ENOLCK, "No locks available")


def test_a_file_system_that_cannot_lock_is_named_in_one_warning_and_nothing_stops(tmp_path, monkeypatch):
    """ENOLCK (NFS without its lock service) was a raw OSError that stopped every recording, timing
    and store on such a folder; the lock is now granted, with one warning naming the file and what
    it no longer keeps out."""
    import nitro.file_lock as file_lock
    from nitro.file_lock import LockUnavailableWarning
    monkeypatch.setattr(file_lock, "fcntl", _NoLocks)
    path = tmp_path / "x.lock"
    with pytest.warns(LockUnavailableWarning, match=r"x\.lock: its file system cannot lock files.*another recording"):
        with FileLock(path, keeps_out="another recording") as lock:
            assert lock.try_lock() and lock.locked
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")             # once per file: no second warning
        with FileLock(path) as again:
            assert again.lock() and again.lock(timeout=1)
    assert not again.locked


def test_other_lock_errors_are_still_raised(tmp_path, monkeypatch):
    import errno

    import nitro.file_lock as file_lock

    class _Broken(_NoLocks):
        @staticmethod
        def flock(fd, op):
            raise OSError(errno.EBADF, "Bad file descriptor")
    monkeypatch.setattr(file_lock, "fcntl", _Broken)
    with FileLock(tmp_path / "y.lock") as lock:
        with pytest.raises(OSError, match="Bad file descriptor"):
            lock.try_lock()
