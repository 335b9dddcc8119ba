"""Recommended Redis ACL rules for nitro's three kinds of store user (README, "Access control"),
each limited to nitro's keys: ``READER`` lists, exports and tunes without writing; ``RECORDER``
adds training rows, device records and profiles, but can neither delete nor write a model;
``OWNER`` does everything nitro does (models, removing computations), and nothing dangerous.

Each is a tuple of ``ACL SETUSER`` arguments to follow ``ACL SETUSER <user> on >PASSWORD`` (or,
in an ``aclfile``, ``user <user> on >PASSWORD``: :func:`aclfile_line`); on a Redis Cluster, run it
on every node (ACL users are per node)."""
from __future__ import annotations

_BASE = ("resetkeys", "resetchannels", "-@all", "+@read", "+@connection", "-@dangerous",
         "+cluster|slots", "+cluster|shards", "+cluster|nodes", "+cluster|info")

READER = (*_BASE, "~nitro:*")

# the keys a recorder writes, and no others: model keys (``nitro:{c}:model:<d>``, strings) match
# none of them, because escaped names hold no ':', '{' or '}'
_RECORDED = ("nitro:schema", "nitro:computations", "nitro:devices", "nitro:device:*",
             "nitro:device_metadata:*", "nitro:proxy_profiles:*", "nitro:{*}:meta", "nitro:{*}:devices",
             "nitro:{*}:rows:*", "nitro:{*}:profiles:*")
RECORDER = (*_BASE, "+hset", "+hsetnx", "+sadd", "+setnx", "+multi", "+exec", "+discard", "+watch", "+unwatch",
            "%R~nitro:*",       # WATCH: an import merges with the stored rows under it (Store.merge_rows)
            *(f"%W~{k}" for k in _RECORDED),
            "(+del ~nitro:device:*)")    # replacing a device's feature record deletes it first (any
                                         # device's: a key pattern cannot tell the recorder's own)

OWNER = (*_BASE, "+@write", "+@transaction", "-@dangerous", "-function", "~nitro:*")   # FUNCTION FLUSH is @write


def aclfile_line(user: str, rules: tuple) -> str:
    """``rules`` as a line of a Redis ``aclfile`` (``user NAME on >PASSWORD ...``: selectors unquoted)."""
    return f"user {user} on >PASSWORD {' '.join(rules)}"

RULES = {"reader": READER, "recorder": RECORDER, "owner": OWNER}

