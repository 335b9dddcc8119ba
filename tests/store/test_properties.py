"""Property-based tests of the store's schema: whatever a record holds (garbage, NaN,
wrong types, a newer schema), reading it gives a valid record or one clear StoreError;
escaped key names never collide."""
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nitro.row import TrainingRow
from nitro.model import FORMAT, SelectorModel
from nitro.store import StoreError, keys

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
row_like = st.fixed_dictionaries(
    {}, optional={"input": json_values | st.text(min_size=1, max_size=8),
                  "features": st.dictionaries(st.text(max_size=4), json_values, max_size=3),
                  "times": st.dictionaries(st.sampled_from(["a", "b"]), json_values, max_size=2),
                  "failed": json_values, "schema": st.integers(-1, 3) | json_values})
names = st.text(min_size=1, max_size=12)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
valid_rows = st.builds(
    TrainingRow, names, st.dictionaries(st.sampled_from(["N", "S"]), finite, min_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.none() | st.floats(0, 1e6, exclude_min=True), min_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.text(max_size=10), max_size=1))


@SETTINGS
@given(raw=st.one_of(row_like.map(lambda d: json.dumps(d, allow_nan=True)),
                     json_values.map(lambda v: json.dumps(v, allow_nan=True)),
                     st.binary(max_size=40)))
def test_any_stored_row_reads_as_a_valid_row_or_one_clear_error(store, raw):
    store.client.flushall()
    store.declare("c", ["a", "b"], ["N"])
    store.client.hset(keys.rows("c", "d"), "in", raw)
    try:
        [row] = store.rows("c", "d")
    except StoreError as exc:
        assert "c/d/in" in str(exc)
        return
    assert row.input_id == "in"
    assert all(math.isfinite(v) for v in row.features.values())
    assert all(t is None or (math.isfinite(t) and t >= 0) for t in row.times.values())


@SETTINGS
@given(row=valid_rows)
def test_valid_rows_round_trip_exactly(store, row):
    store.client.flushall()
    store.declare("c", ["a", "b"], ["N", "S"])
    store.put_row("c", "d", row)
    assert store.rows("c", "d") == [row]


@SETTINGS
@given(bad=st.sampled_from([math.nan, math.inf, -math.inf]), where=st.sampled_from(["features", "times"]))
def test_non_finite_values_are_refused_and_nothing_is_written(store, bad, where):
    store.client.flushall()
    store.declare("c", ["a", "b"], ["N"])
    store.put_row("c", "d", TrainingRow("ok", {"N": 1.0}, {"a": 1.0, "b": 2.0}))
    row = TrainingRow("bad", {"N": 1.0}, {"a": 1.0, "b": 2.0})
    getattr(row, where)["N" if where == "features" else "a"] = bad
    with pytest.raises(ValueError, match="not a finite number"):
        store.put_row("c", "d", row)
    with pytest.raises(ValueError, match="not a finite number"):
        store.put_rows("c", "d", [TrainingRow("also-ok", {"N": 2.0}, {"a": 1.0, "b": 2.0}), row])
    assert [r.input_id for r in store.rows("c", "d")] == ["ok"]


def test_records_from_a_newer_schema_are_refused_clearly(store):
    store.declare("c", ["a"], ["N"])
    store.client.hset(keys.rows("c", "d"), "in", json.dumps(
        {"schema": keys.SCHEMA_VERSION + 1, "input": "in", "features": {}, "times": {}, "new": [1]}))
    with pytest.raises(StoreError, match="schema version 2; this nitro reads up to version 1: upgrade"):
        store.rows("c", "d")
    model = {"format": FORMAT + 1, "kind": "constant", "variants": ["a"], "input_features": [], "params": {"label": 0}}
    with pytest.raises(ValueError, match=f"unsupported model format {FORMAT + 1}"):
        SelectorModel.from_dict(model)
    assert store.client.hlen(keys.rows("c", "d")) == 1           # refused, not deleted


def test_unknown_ids_are_named(store):
    with pytest.raises(StoreError, match="unknown computation 'nope'"):
        store.rows("nope", "dev")
    with pytest.raises(StoreError, match="unknown device 'dev9'"):
        store.device("dev9")
    store.declare("c", ["a"], ["N"])
    assert store.rows("c", "never-recorded") == [] and store.model("c", "dev9") is None


@settings(max_examples=200, deadline=None)
@given(data=json_values | st.fixed_dictionaries(
    {"format": st.just(1), "kind": st.sampled_from(["constant", "svc", "kernel"])},
    optional={"variants": json_values, "input_features": json_values, "params": json_values,
              "device_features": json_values, "provenance": json_values}))
def test_any_model_loads_valid_or_raises_value_error(data):
    try:
        model = SelectorModel.from_dict(data)
    except ValueError:
        return
    assert model.variants and all(isinstance(v, str) for v in model.variants)


@settings(max_examples=300, deadline=None)
@given(a=st.tuples(names, names), b=st.tuples(names, names))
def test_escaped_keys_never_collide_or_leave_their_hash_tag(a, b):
    ka, kb = keys.rows(*a), keys.rows(*b)
    assert (ka == kb) == (a == b)
    for name in a:
        e = keys.escape(name)
        assert not set(e) & set(":{}*?[]| \n")
    assert ka.count("{") == ka.count("}") == 1
    assert ka.startswith(f"nitro:{{{keys.escape(a[0])}}}:rows:")


@SETTINGS
@given(comps=st.lists(names, min_size=2, max_size=4, unique=True), dev=names)
def test_computations_with_hostile_names_keep_to_their_own_keys(store, comps, dev):
    store.client.flushall()
    for i, c in enumerate(comps):
        store.declare(c, ["a"], ["N"])
        store.put_row(c, dev, TrainingRow(f"row-of-{i}", {"N": float(i)}, {"a": 1.0}))
    for i, c in enumerate(comps):
        assert [r.input_id for r in store.rows(c, dev)] == [f"row-of-{i}"]
    assert store.computations() == sorted(comps)
