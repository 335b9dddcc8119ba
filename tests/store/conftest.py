"""Real ``redis-server`` processes that a test controls: started with its own options
(persistence, a password, TLS), killed with SIGKILL and restarted on the same port and data
directory. Tests using them skip, with the reason, where no system redis-server exists."""
from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import redis


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server on a loopback port with a data directory; ``kill`` and ``start``
    again keep both, as an operator restarting a crashed server would."""

    def __init__(self, exe: str, directory: Path, args=(), tls: dict | None = None, password=None):
        self.exe, self.dir, self.args = exe, Path(directory), list(args)
        self.port, self.tls, self.password = free_port(), tls, password
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
                if self.client().ping():
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

