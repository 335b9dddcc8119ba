"""Throwaway local Redis servers for the store benchmark: one ``redis-server``, or a cluster of
three masters (``redis-cli --cluster create``), on free loopback ports in a temporary directory,
configured as the README recommends (``appendonly yes``, ``appendfsync everysec``)."""
from __future__ import annotations

import contextlib
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis

PERSISTENCE = ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]


def _free_port(bus: bool) -> int:
    """A free loopback port (below 55536 with its cluster bus port +10000 free as well)."""
    while True:
        port = random.randrange(20000, 55000)
        try:
            for p in (port, port + 10000) if bus else (port,):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port


def _start(exe: str, directory: Path, args: list[str], bus: bool) -> tuple[subprocess.Popen, int]:
    directory.mkdir(parents=True)
    port = _free_port(bus)
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
                             "--logfile", str(directory / "redis.log"), *PERSISTENCE, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 10
    while True:
        try:
            redis.Redis(port=port).ping()
            return proc, port
        except redis.ConnectionError:
            if proc.poll() is not None or time.monotonic() > end:
                proc.kill()
                raise RuntimeError(f"redis-server did not start in {directory}") from None
            time.sleep(0.02)


@contextlib.contextmanager
def local_redis(directory: Path, cluster: bool = False):
    """Yield the URL of a started server (or three-master cluster); stop it afterwards."""
    exe, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if not exe or (cluster and not cli):
        raise FileNotFoundError("no redis-server" + (" and redis-cli" if cluster else "") + " on PATH")
    procs = []
    try:
        args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"] if cluster else []
        for i in range(3 if cluster else 1):
            procs.append(_start(exe, Path(directory) / f"node{i}", args, cluster))
        ports = [port for _, port in procs]
        if cluster:
            subprocess.run([cli, "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports], "--cluster-replicas",
                            "0", "--cluster-yes"], check=True, capture_output=True, timeout=60)
            end = time.monotonic() + 30
            while not all(b"cluster_state:ok" in redis.Redis(port=p).execute_command("CLUSTER", "INFO") for p in ports):
                if time.monotonic() > end:
                    raise RuntimeError("the local Redis Cluster did not reach cluster_state:ok")
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{ports[0]}/0" + ("?cluster=true" if cluster else "")
    finally:
        for proc, _ in procs:
            proc.terminate()
        for proc, _ in procs:
            proc.wait(30)
