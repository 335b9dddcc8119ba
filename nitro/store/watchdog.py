"""Sidecar that ends the embedded ``redis-server`` once no nitro process uses it.

Run as a script (``python watchdog.py SOCKET SERVER_PID OWNER_PID LOCK_FILE``, standard library only, so
it starts in ~20 ms; of nitro it loads :mod:`nitro.file_lock` alone, from its file). It is started
in its own session by the process that started the server, and forks once so that it is not that process's child (the
starter waits for the fork's parent and reads the watchdog's pid once its connection is named),
so killing that process, even with SIGKILL, or its process group leaves the watchdog running. Every half second it lists the server's clients: nitro names
its connections ``nitro-<pid>``, and once no client other than itself is connected and none of
the pids it has seen is alive (twice in a row), it sends ``SHUTDOWN SAVE`` — the server flushes
its append-only file and writes its snapshot, as on a clean exit — and exits; the last check
and the shutdown happen under the data directory's server lock, as a nitro process's own release
does, so that no process connects in between. If the server
does not go within 10 s it is sent SIGTERM, then SIGKILL. The watchdog also exits when the
server goes away by any other path.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path

if __name__ == "__main__":      # run with -I -S, nitro is not importable: its lock module is loaded from its file
    import importlib.util
    _spec = importlib.util.spec_from_file_location("nitro_file_lock",
                                                   Path(__file__).resolve().parents[1] / "file_lock.py")
    _file_lock = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_file_lock)
    FileLock = _file_lock.FileLock
else:
    from ..file_lock import FileLock

NAME = "nitro-watchdog"
POLL_S = 0.5


def _command(sock: socket.socket, *args: str) -> bytes:
    """One RESP command; the raw reply (simple string, error or one bulk string)."""
    payload = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
    sock.sendall(payload.encode())
    head = b""
    while not head.endswith(b"\r\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError("server closed the connection")
        head += chunk
    if head[:1] != b"$":
        return head[:-2]
    size = int(head[1:-2])
    body = b""
    while len(body) < size + 2:
        chunk = sock.recv(size + 2 - len(body))
        if not chunk:
            raise ConnectionError("server closed the connection")
        body += chunk
    return body[:-2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie (killed, not yet reaped) is not a user of the server
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _others(client_list: bytes) -> tuple[int, set[int]]:
    """Connections other than the watchdog's, and the pids in their ``nitro-<pid>`` names."""
    count, pids = 0, set()
    for line in client_list.decode(errors="replace").splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        name = fields.get("name", "")
        if name == NAME:
            continue
        count += 1
        if name.startswith("nitro-") and name[6:].isdigit():
            pids.add(int(name[6:]))
    return count, pids


def _stop_server(sock: socket.socket, server_pid: int) -> None:
    try:
        if _command(sock, "SHUTDOWN", "SAVE").startswith(b"-"):
            # the snapshot cannot be written (its directory was removed): the append-only file
            # was flushed by the attempt, so end without the snapshot
            _command(sock, "SHUTDOWN", "NOSAVE")
    except OSError:
        pass            # the server closes the connection as it exits
    for sig in (signal.SIGTERM, signal.SIGKILL):
        deadline = time.monotonic() + 10
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _alive(server_pid):
            return
        try:
            os.kill(server_pid, sig)
        except ProcessLookupError:
            return


def _idle(sock: socket.socket, owners: set[int]) -> bool:
    """Whether no client but the watchdog is connected and no pid seen is alive (``owners`` is
    updated with the pids seen and pruned of the dead)."""
    count, pids = _others(_command(sock, "CLIENT", "LIST"))
    owners |= pids
    owners -= {p for p in owners if not _alive(p)}
    return count == 0 and not owners


def _stop_if_idle(sock: socket.socket, server_pid: int, owners: set[int], lock_path: str) -> bool:
    """Under the server lock, look once more and end the server if it is still idle; False when
    the lock is taken (a process is connecting or ending it) or a client came. A data directory
    removed under the server (or one whose lock cannot be taken) is ended without one."""
    try:
        lock = FileLock(lock_path)
    except OSError:         # removed, or not ours to open: ended without the lock
        _stop_server(sock, server_pid)
        return True
    with lock:
        try:
            if not lock.try_lock():
                return False
        except OSError:     # the lock failed otherwise (one that cannot lock is granted): ended without it
            pass
        if not _idle(sock, owners):
            return False
        _stop_server(sock, server_pid)
        return True


def watch(socket_path: str, server_pid: int, owner_pid: int, lock_path: str, ready=lambda: None) -> None:
    """Watch the server until no one uses it, then end it; ``ready()`` once this connection is
    named (a nitro process releasing the server before that would count it as another user)."""
    owners = {owner_pid}
    idle_polls = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(socket_path)
        _command(sock, "CLIENT", "SETNAME", NAME)
        ready()
        while True:
            try:
                idle_polls = idle_polls + 1 if _idle(sock, owners) else 0
                if idle_polls >= 2:
                    if _stop_if_idle(sock, server_pid, owners, lock_path):
                        return
                    idle_polls = 0
            except OSError:
                return          # the server went away by another path
            time.sleep(POLL_S)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # a terminal's Ctrl-C is for nitro, not for us
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    if os.fork():               # the starter waits for this process only, which ends at once: the watchdog
        os._exit(0)             # is no child of the starter (no process of its left unwaited)

    def ready():                # the starter reads the pid once the connection is named, then stdout goes
        print(os.getpid(), flush=True)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    watch(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], ready)
