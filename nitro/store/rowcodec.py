"""Training rows as the store holds them: one JSON object per row, written and read by the
million, so the common case runs in C (msgspec) and the rare one explains itself.

Writing: a row that could not be read back is refused (a :class:`ValueError` naming the row
and the problem) before anything is sent. Reading: each stored value is parsed and
type-checked in one C call (:func:`decoder`); a value it rejects is read again through
:meth:`TrainingRow.from_dict`, which accepts what nitro has always accepted (an integer time, a
number written as text) and names the problem otherwise. The C check accepts only rows that
``from_dict`` accepts with the same result, so both paths give the same rows.
"""
from __future__ import annotations

import functools
import itertools
import json
import math
import numbers
from typing import Annotated, Any, Callable, Literal, Union

import msgspec

from ..row import TrainingRow
from . import keys
from .errors import StoreError

_MAX = 1.7976931348623157e308                   # the largest finite double: bounds exclude inf and NaN
_Finite = Annotated[float, msgspec.Meta(ge=-_MAX, le=_MAX)]
_Seconds = Annotated[float, msgspec.Meta(ge=0.0, le=_MAX)]


@functools.lru_cache(maxsize=64)
def decoder(features: tuple[str, ...] = (), variants: tuple[str, ...] = ()) -> Callable[[bytes], Any]:
    """The C decoder of one computation's stored rows (schema 1; unknown keys such as ``best``
    are skipped). Its feature and variant names are literals, so every row's dicts share one
    key object per name (msgspec's own key cache has 512 slots: names that collide there would
    be a new string in every row); a row naming another is left to the reference reading."""
    def names(known):
        return Literal[known] if known else str
    stored = msgspec.defstruct("StoredRow", [
        ("input", Annotated[str, msgspec.Meta(min_length=1)]),
        ("features", dict[names(features), _Finite]),
        ("times", dict[names(variants), Union[_Seconds, None]]),
        ("failed", dict[names(variants), str], {}),
        ("schema", Annotated[int, msgspec.Meta(le=keys.SCHEMA_VERSION)], 1)], gc=False)
    return msgspec.json.Decoder(stored).decode


def decoder_for(meta: dict) -> Callable[[bytes], Any]:
    """The :func:`decoder` of a computation with metadata ``meta`` (generic names where its
    lists are not lists of names)."""
    def names(key):
        known = meta.get(key)
        return tuple(known) if isinstance(known, list) and all(isinstance(n, str) for n in known) else ()
    return decoder(names("features"), names("variants"))


def _number(obj):
    """numpy's and other registered numbers, which the encoder does not know, as Python's."""
    if isinstance(obj, numbers.Integral):
        return int(obj)
    if isinstance(obj, numbers.Real):
        return float(obj)
    raise TypeError(f"a {type(obj).__name__} is not a number")


_encode = msgspec.json.Encoder(enc_hook=_number).encode


def encode_rows(rows: list[TrainingRow]) -> list[bytes]:
    """The JSON each of ``rows`` is stored as; a :class:`ValueError` names the first row that
    could not be read back (no input id, a value that is no finite number, a time not positive)."""
    if not _storable(rows):
        for row in rows:
            if problem := _problem(row):
                raise ValueError(problem)
    try:
        return [_encode(_Record(r.input_id, r.features, r.times, r.failed, r.best)) for r in rows]
    except (TypeError, msgspec.EncodeError) as exc:
        raise ValueError(f"a training row cannot be stored: {exc}") from None


class _Record(msgspec.Struct, gc=False):
    """A row as it is written (its keys in this order)."""

    input: str
    features: dict
    times: dict
    failed: dict
    best: Union[str, None]
    schema: int = keys.SCHEMA_VERSION


def _storable(rows: list[TrainingRow]) -> bool:
    """Whether every row is storable, checked a batch at a time in C loops (a sum is finite
    only when every term is; fsum raises where it overflows, and never does numpy arithmetic);
    False may be a false alarm (an overflowing sum, an empty reason), which :func:`_problem`
    then clears row by row."""
    chain = itertools.chain.from_iterable
    try:
        ids_ok = all(map(str.__len__, [r.input_id for r in rows]))
        features = math.fsum(chain([r.features.values() for r in rows]))
        every = list(chain([r.times.values() for r in rows]))
        times = list(filter(None, every))                     # drops None and 0 (no time is 0)
        total = math.fsum(times)
        reasons_ok = all(map(str.__len__, chain([r.failed.values() for r in rows])))
    except (TypeError, OverflowError, ValueError):   # no number; overflow; inf - inf
        return False
    return (ids_ok and reasons_ok and features - features == 0 and total - total == 0
            and len(times) == len(every) - every.count(None) and min(times, default=1) > 0)


def _problem(row: TrainingRow) -> str | None:
    """Why ``row`` cannot be stored, naming the row and the values (None: it can)."""
    if not isinstance(row.input_id, str) or not row.input_id:
        return f"training row input id must be a non-empty string, got {row.input_id!r}"

    def finite(v):
        try:
            return isinstance(v, numbers.Real) and math.isfinite(v)
        except OverflowError:   # an integer beyond any double
            return False
    bad = [f"feature {k!r}" for k, v in row.features.items() if not finite(v)] + \
          [f"time of {k!r}" for k, v in row.times.items() if v is not None and not (finite(v) and v > 0)]
    if bad:
        return (f"training row {row.input_id!r} holds a value that is not a finite number "
                f"(times: a positive number of seconds; a failed run is None with its reason in failed): "
                f"{', '.join(bad)}")
    if not all(isinstance(r, str) for r in row.failed.values()):
        return f"training row {row.input_id!r}: failure reasons must be strings, got {row.failed!r}"
    return None


def decode_rows(where: str, batch: list[tuple[bytes, bytes]], decode=decoder()) -> list[TrainingRow]:
    """The rows stored in ``batch`` (hash field, value), validated by ``decode`` (a
    :func:`decoder`); a :class:`StoreError` names ``where`` (computation/device) and the field
    of a bad one."""
    try:
        stored = list(map(decode, [v for _, v in batch]))
    except msgspec.MsgspecError:   # one is not the common case: each on its own, to name it
        return [decode_row(where, field, value, decode) for field, value in batch]
    # msgspec refuses lone surrogates, so every id encodes
    if list(map(str.encode, [s.input for s in stored])) != [f for f, _ in batch]:
        return [decode_row(where, field, value, decode) for field, value in batch]
    return [TrainingRow(s.input, s.features, s.times, s.failed) for s in stored]


def decode_row(where: str, field: bytes, value: bytes, decode=decoder()) -> TrainingRow:
    """The row stored as ``value`` under hash field ``field``, validated (see :func:`decode_rows`)."""
    try:
        s = decode(value)
    except msgspec.MsgspecError:
        row = _decode_slowly(where, field, value)
    else:
        row = TrainingRow(s.input, s.features, s.times, s.failed)
    if row.input_id != field.decode(errors="replace"):
        raise StoreError(f"{where}/{field.decode(errors='replace')}: the row is stored under another "
                         f"input's id ({row.input_id!r})")
    return row


def _decode_slowly(where: str, field: bytes, value: bytes) -> TrainingRow:
    """The reference reading of one stored value: Python's JSON and :meth:`TrainingRow.from_dict`."""
    where = f"{where}/{field.decode(errors='replace')}"
    try:
        data = json.loads(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"malformed training row {where} in the store: {exc}") from None
    version = data.get("schema", 1) if isinstance(data, dict) else 1
    if not isinstance(version, int) or version > keys.SCHEMA_VERSION:
        raise StoreError(f"training row {where} was written with schema version {version!r}; "
                         f"this nitro reads up to version {keys.SCHEMA_VERSION}: upgrade nitro")
    try:
        return TrainingRow.from_dict(data)
    except ValueError as exc:
        raise StoreError(f"{where}: {exc}") from None
