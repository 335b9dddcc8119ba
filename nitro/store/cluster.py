"""Redis Cluster URLs: ``redis://host:port?cluster=true`` (or ``rediss://``) opens redis-py's
``RedisCluster``; the node in the URL is only the first one asked for the slot map."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from redis.cluster import RedisCluster

PARAM = "cluster"


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` asks for a cluster client (``cluster=true``); any other value is refused,
    so that a typo never silently opens a single-node client."""
    for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if name == PARAM:
            if value.lower() != "true":
                raise ValueError(f"cluster={value!r} in the store URL: write cluster=true, or leave it out")
            return True
    return False


def cluster_client(url: str, **kwargs) -> RedisCluster:
    """A ``RedisCluster`` for a ``cluster=true`` URL (``redis://`` or ``rediss://``, database 0
    only: a cluster has no other)."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise ValueError(f"a Redis Cluster URL starts with redis:// or rediss://, not {parts.scheme}://")
    if parts.path.strip("/") not in ("", "0"):
        raise ValueError(f"a Redis Cluster has database 0 only, not {parts.path.strip('/')!r}")
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != PARAM])
    return RedisCluster.from_url(urlunsplit((parts.scheme, parts.netloc, "", query, "")), **kwargs)


def cluster_name(client: RedisCluster) -> str:
    """A cluster client's name for messages: one of its nodes, never a password."""
    node = client.get_default_node() or client.get_nodes()[0]
    return f"redis://{node.host}:{node.port}/0?cluster=true"
