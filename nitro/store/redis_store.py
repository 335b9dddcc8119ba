"""The Store: typed reads and atomic writes of nitro's records in one Redis database."""
from __future__ import annotations

import itertools
import json
import math
import operator
import os
from typing import Callable, Iterable, Iterator, Mapping

import redis
from redis.exceptions import NoPermissionError, RedisClusterException

from ..row import TrainingRow
from . import keys
from .rowcodec import decode_rows, decoder_for, encode_rows
from .connection import ENV_URL, clean, connect, describe
from .errors import StoreError, StorePermissionError


# one encoder for every record but rows (nitro.store.rowcodec): finite numbers only
_dumps = json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode


def _hint(exc: Exception) -> str:
    """What to do about a Redis error met in the middle of work, for the common ones."""
    text = str(exc)
    if isinstance(exc, redis.exceptions.OutOfMemoryError) or "maxmemory" in text:
        return (": the Redis server is full (maxmemory). What was written before is kept; free memory or raise "
                "maxmemory, then run the same command again")
    if "WRONGTYPE" in text:
        return (": a key under nitro: holds another kind of value (another program's key in this database?); "
                "give nitro a database of its own")
    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, redis.exceptions.BusyLoadingError)):
        return ": what was written before is kept; run the same command again to go on where it stopped"
    return ""


def _field(raw: bytes, what: str, second) -> tuple:
    """A ``"<name>|<key>"`` hash field, split and typed (``second`` converts the key)."""
    try:
        name, key = raw.decode().rsplit("|", 1) if second is int else raw.decode().split("|", 1)
        return name, second(key)
    except ValueError:
        raise StoreError(f"malformed {what} field {raw[:60]!r} in the store") from None


def _names(items, what: str, computation: str) -> list[str]:
    """``items`` as a list of distinct non-empty names: a string is one name's letters, not a list."""
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(f"{computation}: {what} are a list of names, got {items!r}")
    names = list(items)
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names) or \
            (what == "variants" and not names):
        raise ValueError(f"{computation}: {what} are distinct non-empty names{' (one or more)' if what == 'variants' else ''}, "
                         f"got {names!r}")
    return names


def _check_fields(profiles: Mapping, what: str, shape: str, second: type) -> None:
    """Refuse a profile key that :func:`_field` could not read back: one bad field would make
    every record of the hash unreadable."""
    for key, record in profiles.items():
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str) and key[0]
                and isinstance(key[1], second) and not isinstance(key[1], bool) and isinstance(record, Mapping)
                and (second is int or "|" not in key[0])):
            raise ValueError(f"a {what} is keyed {shape} ({'no' if second is int else 'the first without'} '|'), "
                             f"its metrics a mapping; got {key!r}: {type(record).__name__}")


def _feature_value_ok(value) -> bool:
    """Whether ``value`` may be a device feature's value: None (unknown) or a finite number
    (not a bool, which JSON would store as ``true``)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def _encode_feature(device_id: str, name, rec) -> str:
    """One feature of a device record as stored, or a ValueError naming the device, the
    feature and the bad part: a record that a later read could not use is never written."""
    if not (isinstance(name, str) and name) or not isinstance(rec, Mapping):
        raise ValueError(f"a feature of device {device_id!r} is a non-empty name mapped to "
                         f"{{'value', 'unit', 'source'}}, got {name!r}: {rec!r}")
    value, unit, source = rec.get("value"), rec.get("unit") or "", rec.get("source") or ""
    if not _feature_value_ok(value):
        raise ValueError(f"device feature {name!r} of {device_id!r} is not a finite number: {value!r}")
    if not (isinstance(unit, str) and isinstance(source, str)):
        raise ValueError(f"the unit and source of device feature {name!r} of {device_id!r} are text, "
                         f"got {unit!r} and {source!r}")
    return _dumps({"value": value, "unit": unit, "source": source})


def _decode_feature(device_id: str, name: bytes, raw: bytes) -> dict:
    """One stored feature of a device record, validated (a finite number or null, text unit
    and source), or a StoreError naming the device and the feature: a NaN or a text value
    would otherwise reach a model as a feature."""
    what = f"feature {name.decode(errors='replace')!r} of device {device_id!r}"
    rec = _loads(raw, what)
    if not (isinstance(rec, dict) and _feature_value_ok(rec.get("value"))
            and all(isinstance(rec.get(k) or "", str) for k in ("unit", "source"))):
        raise StoreError(f"malformed {what} in the store: {raw[:80]!r} (a feature is "
                         '{"value": a finite number or null, "unit": text, "source": text}); '
                         "record the device again to replace it")
    return rec


def _loads(raw, what: str):
    try:
        return json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"malformed {what} in the store: {exc}") from None


def same_computation(meta: dict, variants, features) -> bool:
    """Whether ``variants`` and ``features`` name the computation of ``meta`` (see
    :meth:`Store.declare`: variants in any order, features in the same order)."""
    return sorted(meta["variants"]) == sorted(variants) and meta["features"] == list(features)


class Store:
    """nitro's view of a Redis database.

    Every record is one Redis value written in one command or one MULTI/EXEC transaction,
    so a reader never sees half a record; every transaction touches the keys of one hash tag
    only, so that it runs on one Redis Cluster slot. Nothing read back is unpickled or evaluated:
    records are JSON and are validated on load. Rows move in batches of :attr:`BATCH`: one
    transaction per batch written, one HSCAN reply per batch read.
    """

    BATCH = 5000

    def __init__(self, url: str | None = None, client: redis.Redis | None = None):
        if not (url is None or isinstance(url, str)):
            raise TypeError(f"a store is opened from a Redis URL (str) or None (the embedded store), got {url!r}")
        if url is None and client is None:       # $NITRO_STORE: named and its password masked as a given URL
            url = os.environ.get(ENV_URL) or None
        self.url = url
        self.client = client if client is not None else connect(url)
        self._check_schema()
        self._warn_if_evicting()

    def __repr__(self):
        return f"Store({self.name})"

    @property
    def name(self) -> str:
        """The store as messages name it (never with its password)."""
        return describe(self.url, self.client)

    # -- plumbing -----------------------------------------------------------------------
    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (redis.RedisError, RedisClusterException) as exc:
            raise self._error(exc) from None

    def _error(self, exc: Exception) -> StoreError:
        """A Redis error as one StoreError naming the store (never its password)."""
        if isinstance(exc, NoPermissionError):
            return StorePermissionError(f"store {self.name} refused: the user lacks a permission "
                              f"({clean(exc, self.url)}); connect as a user whose ACL allows it "
                              "(README, \"Access control\")")
        return StoreError(f"store {self.name} failed ({type(exc).__name__}: {clean(exc, self.url)}){_hint(exc)}")

    def _check_schema(self):
        found = self._call(self.client.get, keys.schema())
        if found is None:       # an empty store: marked by its first declaration, not by reading it
            return
        try:
            version = int(found)
        except ValueError:
            raise StoreError(f"store {self.name} has an unreadable schema version") from None
        if version > keys.SCHEMA_VERSION:
            raise StoreError(f"store {self.name} uses schema version {version}; this "
                             f"nitro reads up to version {keys.SCHEMA_VERSION}: upgrade nitro")

    def _warn_if_evicting(self):
        """Warn when the server drops keys without a time to live once it is full (an
        ``allkeys-*`` ``maxmemory-policy``): nitro's rows, declarations and device records have
        none, so such a server loses them silently. A user that may not run INFO is not warned."""
        try:
            info = self.client.info("memory")
        except (redis.RedisError, RedisClusterException):
            return
        nodes = [info] if "maxmemory_policy" in info else [v for v in info.values() if isinstance(v, dict)]
        evicting = sorted({n.get("maxmemory_policy") for n in nodes} & {"allkeys-lru", "allkeys-lfu", "allkeys-random"})
        if evicting:
            import warnings
            warnings.warn(f"store {self.name} evicts keys when full (maxmemory-policy {evicting[0]}): recorded rows "
                          "can be dropped without a word; set maxmemory-policy noeviction (README, \"Running a shared "
                          "store\")", RuntimeWarning, stacklevel=3)

    # -- computations ---------------------------------------------------------------------
    def computations(self) -> list[str]:
        return sorted(m.decode() for m in self._call(self.client.smembers, keys.computations()))

    def declare(self, computation: str, variants: Iterable[str], features: Iterable[str]):
        """Record (or check) a computation's variant and feature names. Variants are named in
        every row and model, so the same variants in another order are the same computation
        (an import lists them sorted, a code variant in its own order); features are positions
        of a model's input, so their order must match. Read and written under WATCH: of two
        processes declaring one new name at once, one declaration is stored and the other is
        checked against it (both were stored, the last one winning)."""
        variants, features = _names(variants, "variants", computation), _names(features, "features", computation)

        def declare(pipe):
            meta = self._decode_meta(computation, pipe.hgetall(keys.meta(computation)), missing_ok=True)
            if meta and not same_computation(meta, variants, features):
                raise StoreError(
                    f"computation {computation!r} is stored with variants {meta['variants']} and "
                    f"features {meta['features']}, not {variants} and {features}: use another name "
                    f"or remove the stored computation first (nitro store rm {computation} --yes)")
            pipe.multi()
            if not meta:
                pipe.hset(keys.meta(computation), mapping={"variants": _dumps(variants), "features": _dumps(features)})

        self._call(self.client.setnx, keys.schema(), keys.SCHEMA_VERSION)   # the store's first: marked
        self._watched((keys.meta(computation),), declare, f"the declaration of {computation!r}")
        # after the metadata, so that a listed computation always has it (and idempotent, so
        # that a crash between the two is repaired by the next declare)
        self._call(self.client.sadd, keys.computations(), computation)

    def meta(self, computation: str, missing_ok: bool = False) -> dict | None:
        return self._decode_meta(computation, self._call(self.client.hgetall, keys.meta(computation)), missing_ok)

    def _decode_meta(self, computation: str, raw: dict, missing_ok: bool = False) -> dict | None:
        """A declaration as read (``HGETALL``); None or an error naming the computation when absent."""
        if not raw:
            if missing_ok:
                return None
            names = self.computations()
            known, listed = ", ".join(names) or "none", computation in names
            raise StoreError(f"computation {computation!r} is listed but its declaration ({keys.meta(computation)}) "
                             "is missing (evicted by a server that drops keys when full?): remove what is left with "
                             f"nitro store rm {computation!r} --yes" if listed else
                             f"unknown computation {computation!r} in the store (known: {known})")
        return {k.decode(): _loads(v, f"metadata of {computation!r}") for k, v in raw.items()}

    def _watched(self, watched: tuple[str, ...], body: Callable, what: str, attempts: int = 100):
        """Run ``body(pipe)`` under WATCH of the ``watched`` keys: it reads (the pipeline in
        immediate mode), calls ``pipe.multi()`` and queues its writes, which are sent as one
        transaction; it runs again when another client changed a watched key in between
        (``what`` names the write in the error after ``attempts`` tries)."""
        for _ in range(attempts):
            try:
                with self.client.pipeline(transaction=True) as pipe:
                    pipe.watch(*watched)
                    body(pipe)
                    pipe.execute()
                return
            except redis.WatchError:      # changed by another client: read it again
                continue
            except (redis.RedisError, RedisClusterException) as exc:
                raise self._error(exc) from None
        raise StoreError(f"store {self.name}: {what} changed under {attempts} attempts to write it (other writers); "
                         "run again: what was written is kept")

    # -- training rows -----------------------------------------------------------------------
    def _check_rows(self, computation: str, rows: list[TrainingRow], meta: dict | None = None) -> dict:
        """Refuse rows that do not fit the declared computation (an undeclared one included):
        stored, they would break every later read of it. Returns the declaration (``meta``, read
        from the store unless given), so that a caller with many batches reads it once."""
        meta = meta or self.meta(computation)
        variants, features = set(meta["variants"]), set(meta["features"])
        for row in rows:
            if not isinstance(row, TrainingRow):
                raise TypeError(f"{computation}: a row is a nitro TrainingRow, got {type(row).__name__}")
            if row.features.keys() != features or not variants.issuperset(row.times) \
                    or not variants.issuperset(row.failed):
                raise ValueError(f"{computation}: row {row.input_id!r} has features {sorted(row.features)} and "
                                 f"variants {sorted({*row.times, *row.failed})}; the computation is declared with "
                                 f"features {meta['features']} and variants {meta['variants']}")
        return meta

    def put_row(self, computation: str, device_id: str, row: TrainingRow):
        """Insert or atomically replace one input's row (see :meth:`put_rows`)."""
        self.put_rows(computation, device_id, [row])

    def put_rows(self, computation: str, device_id: str, rows: Iterable[TrainingRow]):
        """Insert or replace many rows: one transaction per :attr:`BATCH` rows, each batch
        checked whole against the declaration, read under WATCH, so that no row is written once
        the computation is removed (a removal at the same moment left rows behind, unlisted);
        each row is written whole; after a failure, the rows of the batches acknowledged are stored."""
        rows, key = iter(rows), keys.rows(computation, device_id)
        while batch := list(itertools.islice(rows, self.BATCH)):
            encoded = None

            def write(pipe):
                nonlocal encoded
                self._check_rows(computation, batch, self._decode_meta(computation, pipe.hgetall(keys.meta(computation))))
                encoded = encoded or encode_rows(batch)
                pipe.multi()
                pipe.hset(key, items=[x for pair in zip([r.input_id for r in batch], encoded) for x in pair])
                pipe.sadd(keys.computation_devices(computation), device_id)

            self._watched((keys.meta(computation),), write, f"the declaration of {computation!r}")

    def merge_rows(self, computation: str, device_id: str, rows: Iterable[TrainingRow],
                   merge: Callable[[TrainingRow, TrainingRow | None], TrainingRow], attempts: int = 100) -> None:
        """Write each row merged with the stored row of its input (``merge(new, stored or None)``),
        :attr:`BATCH` rows per transaction: the batch's stored rows are read under WATCH, so that
        when another writer changes the device's rows between the read and the write, the batch
        is read and merged again instead of writing over what that writer stored."""
        rows, key, meta = iter(rows), keys.rows(computation, device_id), self.meta(computation)
        where, decode = f"{computation}/{device_id}", decoder_for(meta)
        while batch := list(itertools.islice(rows, self.BATCH)):
            ids = [r.input_id for r in batch]

            def merged(pipe):        # the declaration watched too: a removal at the same moment
                meta = self._decode_meta(computation, pipe.hgetall(keys.meta(computation)))
                found = [(i.encode(), v) for i, v in zip(ids, pipe.hmget(key, ids)) if v is not None]
                stored = {r.input_id: r for r in decode_rows(where, found, decode)}
                out = [merge(r, stored.get(r.input_id)) for r in batch]
                self._check_rows(computation, out, meta)
                pipe.multi()
                pipe.hset(key, items=[x for pair in zip(ids, encode_rows(out)) for x in pair])
                pipe.sadd(keys.computation_devices(computation), device_id)

            self._watched((key, keys.meta(computation)), merged, f"the rows of {where}", attempts)

    def _scan_rows(self, computation: str, device_id: str) -> Iterator[list[tuple[bytes, bytes]]]:
        """The raw fields of a device's rows, one HSCAN reply (about :attr:`BATCH`) at a time."""
        key, cursor = keys.rows(computation, device_id), 0
        while True:
            cursor, batch = self._call(self.client.hscan, key, cursor, count=self.BATCH)
            yield list(batch.items())
            if cursor == 0:
                return

    def scan_rows(self, computation: str, device_id: str) -> Iterator[list[TrainingRow]]:
        """The device's training rows, each validated (a StoreError names a bad one), about
        :attr:`BATCH` at a time in no particular order; memory holds one batch. An input may
        come twice when rows are written meanwhile (HSCAN's guarantee): the later is as new."""
        meta = self.meta(computation)
        where, decode = f"{computation}/{device_id}", decoder_for(meta)
        for batch in self._scan_rows(computation, device_id):
            yield decode_rows(where, batch, decode)

    def rows(self, computation: str, device_id: str) -> list[TrainingRow]:
        """The device's training rows, each validated (a StoreError names a bad one), in
        input-id order."""
        found, input_id = {}, operator.attrgetter("input_id")     # by input id: HSCAN may repeat a field
        for batch in self.scan_rows(computation, device_id):
            found.update(zip(map(input_id, batch), batch))
        return sorted(found.values(), key=input_id)   # str order is the UTF-8 fields' byte order

    def recorded_inputs(self, computation: str, device_id: str) -> set[str]:
        return {f.decode() for f in self._call(self.client.hkeys, keys.rows(computation, device_id))}

    def row_count(self, computation: str, device_id: str) -> int:
        """How many inputs the device has a row of (without reading them)."""
        return self._call(self.client.hlen, keys.rows(computation, device_id))

    def devices(self, computation: str) -> list[str]:
        """Devices holding training rows of ``computation``."""
        self.meta(computation)
        return sorted(m.decode() for m in
                      self._call(self.client.smembers, keys.computation_devices(computation)))

    # -- device features ----------------------------------------------------------------------
    def put_device(self, device_id: str, features: Mapping[str, Mapping], replace: bool = True):
        """Write a device's feature record: name -> {"value", "unit", "source"}; with
        ``replace=False`` the given features are added to (or update) the stored ones. Each
        feature is checked first (a finite number or None, text unit and source), and an empty
        record is refused: replacing with it would erase the stored one and leave the device
        listed without a record."""
        if not isinstance(features, Mapping) or not features:
            raise ValueError(f"a device record maps one or more feature names to {{'value', 'unit', 'source'}}; "
                             f"got {features!r} for {device_id!r} (nothing was written)")
        mapping = {name: _encode_feature(device_id, name, rec) for name, rec in features.items()}
        pipe = self.client.pipeline(transaction=True)
        if replace:
            pipe.delete(keys.device(device_id))
        pipe.hset(keys.device(device_id), mapping=mapping)
        self._call(pipe.execute)
        self._call(self.client.sadd, keys.devices_with_features(), device_id)

    def device(self, device_id: str, missing_ok: bool = False) -> dict | None:
        raw = self._call(self.client.hgetall, keys.device(device_id))
        if not raw:
            if missing_ok:
                return None
            raise StoreError(f"unknown device {device_id!r}: the store has no features for it")
        return {k.decode(): _decode_feature(device_id, k, v) for k, v in raw.items()}

    def put_device_metadata(self, device_id: str, metadata: Mapping[str, str], replace: bool = True):
        """Add (or update) a device's metadata: name -> text (``vendor``, ``kind``, ``arch``).
        Kept apart from its features so that no learner ever takes them for one. With
        ``replace=False`` a name already recorded keeps its value (what an import or a user set
        wins over what nitro reads from the device)."""
        for name, value in metadata.items():
            if not (isinstance(name, str) and name and isinstance(value, str) and value):
                raise ValueError(f"device metadata of {device_id!r} must map names to non-empty strings, "
                                 f"got {name!r}: {value!r}")
        if not metadata:
            return
        key = keys.device_metadata(device_id)
        if replace:
            self._call(self.client.hset, key, mapping={n: _dumps(v) for n, v in metadata.items()})
            return
        pipe = self.client.pipeline(transaction=True)
        for n, v in metadata.items():
            pipe.hsetnx(key, n, _dumps(v))
        self._call(pipe.execute)

    def device_metadata(self, device_id: str) -> dict[str, str]:
        """A device's metadata (``{}`` when none is recorded)."""
        raw = self._call(self.client.hgetall, keys.device_metadata(device_id))
        out = {k.decode(): _loads(v, f"metadata of device {device_id!r}") for k, v in raw.items()}
        bad = [k for k, v in out.items() if not isinstance(v, str)]
        if bad:
            raise StoreError(f"malformed metadata {bad} of device {device_id!r} in the store: not text")
        return out

    def device_ids(self) -> list[str]:
        return sorted(m.decode() for m in self._call(self.client.smembers, keys.devices_with_features()))

    # -- models ------------------------------------------------------------------------------
    def put_model(self, computation: str, device_id: str, model):
        """Store ``model`` (a :class:`nitro.SelectorModel` or its ``to_dict()``) for the device."""
        from ..model import SelectorModel        # (imported here: reading rows needs no model code)
        model = model.to_dict() if hasattr(model, "to_dict") else model
        SelectorModel.from_dict(model)            # one that would not load is refused, not stored over a good one
        self._call(self.client.set, keys.model(computation, device_id), _dumps(model))

    def model(self, computation: str, device_id: str) -> dict | None:
        """The stored model of ``computation`` for the device as plain data (None when there is
        none), checked to load: a model this nitro cannot read (an older run's format, another
        program's value) is a StoreError naming the computation and device, not an error about a
        model nobody named from whatever reads it."""
        found = self._checked_model(computation, device_id)
        return None if found is None else found[0]

    def selector_model(self, computation: str, device_id: str):
        """:meth:`model` as the :class:`nitro.model.SelectorModel` its check loaded (None when
        there is none), for callers that choose with it: the model is not parsed twice."""
        found = self._checked_model(computation, device_id)
        return None if found is None else found[1]

    def _checked_model(self, computation: str, device_id: str) -> tuple | None:
        from ..model import SelectorModel
        raw = self._call(self.client.get, keys.model(computation, device_id))
        if raw is None:
            return None
        where = f"{computation}/{device_id}"
        data = _loads(raw, f"model of {where}")
        try:
            return data, SelectorModel.from_dict(data)
        except ValueError as exc:
            raise StoreError(f"the model of {where} stored in {self.name} does not load ({exc}): fit it "
                             "again (tune(), nitro tune-from-source) to replace it") from None

    # -- profiles -----------------------------------------------------------------------------
    def put_profiles(self, computation: str, device_id: str, profiles: Mapping[tuple[str, str], Mapping]):
        _check_fields(profiles, "profile", "(variant, input id)", str)
        mapping = {f"{v}|{i}": _dumps(dict(m)) for (v, i), m in profiles.items()}
        if mapping:
            self._call(self.client.hset, keys.profiles(computation, device_id), mapping=mapping)

    def profiles(self, computation: str, device_id: str) -> dict[tuple[str, str], dict]:
        raw = self._call(self.client.hgetall, keys.profiles(computation, device_id))
        return {_field(k, "profile", str): _loads(v, "profile") for k, v in raw.items()}

    def put_proxy_profiles(self, device_id: str, profiles: Mapping[tuple[str, int], Mapping]):
        _check_fields(profiles, "proxy profile", "(proxy, intensity)", int)
        mapping = {f"{p}|{phi}": _dumps(dict(m)) for (p, phi), m in profiles.items()}
        if mapping:
            self._call(self.client.hset, keys.proxy_profiles(device_id), mapping=mapping)

    def proxy_profiles(self, device_id: str) -> dict[tuple[str, int], dict]:
        raw = self._call(self.client.hgetall, keys.proxy_profiles(device_id))
        return {_field(k, "proxy profile", int): _loads(v, "proxy profile") for k, v in raw.items()}

    # -- removal -----------------------------------------------------------------------------
    def computation_keys(self, computation: str) -> list[str]:
        """Every key of ``computation`` (rows, models, profiles of any device, its declaration),
        found by SCAN: a model of a device without rows (a transfer target) included."""
        found = self._call(lambda: list(self.client.scan_iter(match=keys.of_computation(computation), count=1000)))
        return sorted(k.decode() if isinstance(k, bytes) else k for k in found)

    def models_by_computation(self) -> dict[str, list[str]]:
        """``{computation: devices with a stored model}`` for every computation, by one SCAN of
        the model keys (a SCAN per computation walked a shared server's whole keyspace each time)."""
        from urllib.parse import unquote
        found = self._call(lambda: list(self.client.scan_iter(match=keys.model("*", "*").replace("%2A", "*"),
                                                                count=1000)))
        out: dict[str, list[str]] = {}
        for k in found:
            k = k.decode() if isinstance(k, bytes) else k
            comp, _, device = k[len(keys.PREFIX) + 2:].partition("}:model:")   # escaped names hold no '}' or ':'
            out.setdefault(unquote(comp), []).append(unquote(device))
        return {c: sorted(d) for c, d in out.items()}

    def model_devices(self, computation: str, found: list[str] | None = None) -> list[str]:
        """Devices with a stored model of ``computation``, rows or not (a transfer target);
        ``found``: its :meth:`computation_keys`, where the caller has them (no second SCAN)."""
        from urllib.parse import unquote
        prefix = keys.model(computation, "x")[:-1]
        found = self.computation_keys(computation) if found is None else found
        return sorted(unquote(k[len(prefix):]) for k in found if k.startswith(prefix))

    def drop_computation(self, computation: str):
        """Remove ``computation``: its declaration first (writers read it under WATCH, so none
        writes a row after it), then every other key (:meth:`computation_keys`), then its name,
        last, so that a removal cut short stays listed and runs again. Plain DELs, not a
        transaction: a server over its memory limit refuses a DEL queued in MULTI."""
        self._call(self.client.delete, keys.meta(computation))
        found = self.computation_keys(computation)
        for start in range(0, len(found), 1000):     # keys of one hash tag: one cluster slot
            self._call(self.client.delete, *found[start:start + 1000])
        self._call(self.client.srem, keys.computations(), computation)
