"""Sidecar that ends the embedded ``redis-server`` once no nitro process uses it.

Run as a script (``python watchdog.py SOCKET SERVER_PID OWNER_PID``, standard library only, so
it starts in ~20 ms and imports nothing of nitro). It is started in its own session by the
process that started the server, so killing that process, even with SIGKILL, or its process
group leaves the watchdog running. Every half second it lists the server's clients: nitro names
its connections ``nitro-<pid>``, and once no client other than itself is connected and none of
the pids it has seen is alive (twice in a row), it sends ``SHUTDOWN SAVE`` — the server flushes
its append-only file and writes its snapshot, as on a clean exit — and exits. If the server
does not go within 10 s it is sent SIGTERM, then SIGKILL. The watchdog also exits when the
server goes away by any other path.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import time

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


def watch(socket_path: str, server_pid: int, owner_pid: int) -> None:
    owners = {owner_pid}
    idle_polls = 0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(socket_path)
        _command(sock, "CLIENT", "SETNAME", NAME)
        while True:
            try:
                count, pids = _others(_command(sock, "CLIENT", "LIST"))
            except OSError:
                return          # the server went away by another path
            owners |= pids
            owners = {p for p in owners if _alive(p)}
            idle_polls = idle_polls + 1 if count == 0 and not owners else 0
            if idle_polls >= 2:
                _stop_server(sock, server_pid)
                return
            time.sleep(POLL_S)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # a terminal's Ctrl-C is for nitro, not for us
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    watch(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
