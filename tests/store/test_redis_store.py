import pytest

from nitro.row import TrainingRow
from nitro.store import Store, StoreError, embedded, keys
from nitro.store.connection import connect, redact


def row(i, t=(1.0, 2.0)):
    return TrainingRow(f"in{i}", {"N": float(i)}, {"a": t[0], "b": t[1]})


def test_rows_round_trip_and_replace(store):
    store.declare("hist", ["a", "b"], ["N"])
    store.put_rows("hist", "dev1", [row(1), row(2)])
    store.put_row("hist", "dev1", row(1, (3.0, 2.0)))
    rows = {r.input_id: r for r in store.rows("hist", "dev1")}
    assert set(rows) == {"in1", "in2"}
    assert rows["in1"].best == "b" and rows["in2"].best == "a"
    assert store.devices("hist") == ["dev1"]
    assert store.computations() == ["hist"]


def test_declare_refuses_a_different_signature(store):
    store.declare("hist", ["a", "b"], ["N"])
    store.put_row("hist", "dev1", row(1))
    with pytest.raises(StoreError, match="stored with variants"):
        store.declare("hist", ["a", "c"], ["N"])
    with pytest.raises(StoreError, match="stored with variants"):
        store.declare("hist", ["a", "b"], ["N", "M"])
    assert len(store.rows("hist", "dev1")) == 1


def test_the_same_variants_in_another_order_are_the_same_computation(store):
    """An import declares its variants sorted, a code variant in its own order: rows and
    models name their variants, so both read the same rows (features are positions: strict)."""
    store.declare("hist", ["b", "a"], ["N", "M"])
    with pytest.raises(ValueError, match=r"row 'in1' has features \['N'\] .* declared with features \['N', 'M'\]"):
        store.put_row("hist", "dev1", row(1))       # a row that a read of the computation could not use
    store.put_row("hist", "dev1", TrainingRow("in1", {"N": 1.0, "M": 0.0}, {"a": 1.0, "b": 2.0}))
    store.declare("hist", ["a", "b"], ["N", "M"])
    assert store.meta("hist")["variants"] == ["b", "a"] and len(store.rows("hist", "dev1")) == 1
    with pytest.raises(StoreError, match="stored with variants"):
        store.declare("hist", ["a", "b"], ["M", "N"])


def test_unknown_computation_and_device_are_named(store):
    with pytest.raises(StoreError, match="unknown computation 'nope'"):
        store.devices("nope")
    with pytest.raises(StoreError, match="unknown device 'gpu9'"):
        store.device("gpu9")
    with pytest.raises(TypeError, match="from a Redis URL"):
        Store(6379)                      # a port, not a URL: refused before connecting


def test_device_features_validated_and_merged(store):
    store.put_device("d", {"cores": {"value": 4, "unit": "cores", "source": "query"}})
    store.put_device("d", {"peak_gbps": {"value": 100.0, "unit": "GB/s", "source": "datasheet"}}, replace=False)
    assert set(store.device("d")) == {"cores", "peak_gbps"}
    with pytest.raises(ValueError, match="not a finite number"):
        store.put_device("d", {"x": {"value": float("nan")}})
    assert set(store.device("d")) == {"cores", "peak_gbps"}


def test_a_device_record_that_a_read_could_not_use_is_refused_and_changes_nothing(store):
    store.put_device("d", {"cores": {"value": 4, "unit": "cores", "source": "query"}})
    for bad, message in (({"cores": {"value": True}}, "not a finite number: True"),
                         ({"cores": 4}, "a feature of device 'd' is a non-empty name"),
                         ({"": {"value": 1.0}}, "a feature of device 'd' is a non-empty name"),
                         ({"cores": {"value": 4, "unit": 5}}, "are text, got 5"),
                         ({}, "one or more feature names"), ([("cores", {"value": 1})], "one or more feature names")):
        with pytest.raises(ValueError, match=message):
            store.put_device("d", bad)
    assert store.device("d") == {"cores": {"value": 4, "unit": "cores", "source": "query"}}
    assert store.device_ids() == ["d"]


@pytest.mark.parametrize("stored", ['{"value": NaN, "unit": "", "source": ""}', '{"value": "many"}', "5",
                                    '{"value": 4, "unit": ["x"]}'])
def test_a_malformed_stored_device_feature_is_named_on_reading(store, stored):
    # another program's (or an older run's) record: once read as is, a NaN or a text reached the models
    store.client.hset(keys.device("d"), mapping={"cores": stored, "ok": '{"value": 1, "unit": "", "source": ""}'})
    with pytest.raises(StoreError, match="malformed feature 'cores' of device 'd' in the store"):
        store.device("d")


def test_names_cannot_reach_other_keys(store):
    evil = "hist}:rows:dev1"
    store.declare("hist", ["a", "b"], ["N"])
    store.put_row("hist", "dev1", row(1))
    store.declare(evil, ["a", "b"], ["N"])
    store.put_row(evil, "dev1", row(9))
    assert [r.input_id for r in store.rows("hist", "dev1")] == ["in1"]
    assert "{" not in keys.escape("a{b}") and ":" not in keys.escape("a:b")


def test_models_are_json_not_pickle(store):
    store.put_model("hist", "dev1", {"format": 1, "kind": "constant", "variants": ["a"], "input_features": ["N"],
                                     "params": {"label": 0}})
    with pytest.raises(ValueError, match="a model must be a JSON object"):      # refused, not stored over it
        store.put_model("hist", "dev1", "garbage")
    assert store.model("hist", "dev1")["kind"] == "constant"
    raw = store.client.get(keys.model("hist", "dev1"))
    assert raw.startswith(b"{")
    store.client.set(keys.model("hist", "dev1"), b"\x80\x04garbage")
    with pytest.raises(StoreError, match="malformed model"):
        store.model("hist", "dev1")


def test_a_model_is_stored_as_it_is_or_as_its_dict(store):
    from nitro.model import SelectorModel
    model = SelectorModel(variants=["a", "b"], input_features=["x"], kind="constant", params={"label": 1})
    store.put_model("hist", "dev1", model)
    assert SelectorModel.from_dict(store.model("hist", "dev1")).predict([[0.0]]) == ["b"]
    store.put_model("hist", "dev2", model.to_dict())
    assert store.model("hist", "dev2") == store.model("hist", "dev1")


def test_a_stored_model_that_does_not_load_is_named_by_computation_and_device(store):
    # an older run's model: whatever read it failed with "unsupported model format None", naming no model
    store.declare("hist", ["a", "b"], ["N"])
    store.client.set(keys.model("hist", "dev1"), '{"kind": "svc", "version": 0}')
    with pytest.raises(StoreError, match=r"the model of hist/dev1 stored in .* does not load \(unsupported model format"):
        store.model("hist", "dev1")
    assert store.model("hist", "dev2") is None


def test_newer_schema_is_refused(store):
    store.client.set(keys.schema(), 99)
    with pytest.raises(StoreError, match="schema version 99"):
        Store(client=store.client)


def test_malformed_row_is_reported(store):
    store.declare("hist", ["a", "b"], ["N"])
    store.client.hset(keys.rows("hist", "dev1"), "bad", '{"input": "bad"}')
    with pytest.raises(StoreError, match="malformed training row"):
        store.rows("hist", "dev1")


def test_unreachable_url_is_one_clear_error_without_password():
    with pytest.raises(StoreError, match="does not answer") as err:
        connect("redis://user:s3cret@127.0.0.1:1/0")
    assert "s3cret" not in str(err.value)
    assert redact("rediss://u:pw@host:6380/0") == "rediss://u:***@host:6380/0"


@pytest.mark.parametrize("url, given", [("localhost:6379", "one without a scheme"),
                                        ("http://user:s3cret@localhost:6379/0", "one starting http://"),
                                        ("REDIS://localhost:6379/0", "one starting REDIS://")])
def test_a_url_of_another_scheme_is_named_as_such_not_as_a_server_that_does_not_answer(url, given):
    with pytest.raises(StoreError, match="a store URL starts with redis://, rediss://, unix://") as err:
        connect(url)
    assert given in str(err.value) and "does not answer" not in str(err.value) and "s3cret" not in str(err.value)


def test_embedded_store_persists_across_connections(tmp_path, monkeypatch):
    monkeypatch.setenv("NITRO_DATA_DIR", str(tmp_path))
    s = Store()
    s.declare("hist", ["a", "b"], ["N"])
    s.put_row("hist", "dev1", row(1))
    embedded.shutdown(s.client)
    again = Store()
    assert [r.input_id for r in again.rows("hist", "dev1")] == ["in1"]
    assert (tmp_path / "nitro.rdb").exists()


def test_a_time_of_zero_is_refused_with_the_way_to_record_a_failure(store):
    store.declare("zero", ["a", "b"], ["n"])
    with pytest.raises(ValueError, match=r"positive number of seconds.*time of 'a'"):
        store.put_rows("zero", "dev", [TrainingRow("in0", {"n": 1.0}, {"a": 0.0, "b": 1.0})])
    assert store.rows("zero", "dev") == []


def test_writes_that_a_later_read_could_not_use_are_refused_and_change_nothing(store):
    """A row of an undeclared computation, or with other features or variants, a profile key
    that would not split back, a model that would not load: each refused, the stored data kept."""
    with pytest.raises(StoreError, match="unknown computation 'hist'"):
        store.put_row("hist", "dev1", row(1))
    store.declare("hist", ["a", "b"], ["N"])
    store.put_rows("hist", "dev1", [row(1)])
    for bad in (TrainingRow("in2", {"N": 2.0}, {"zz": 1e-3}), TrainingRow("in2", {"q": 2.0}, {"a": 1.0}),
                TrainingRow("in2", {"N": 2.0}, {"a": 1.0}, {"c": "failed"})):
        with pytest.raises(ValueError, match=r"row 'in2' has features .* declared with features \['N'\] and variants"):
            store.put_rows("hist", "dev1", [bad])
    with pytest.raises(TypeError, match="a row is a nitro TrainingRow, got dict"):
        store.put_rows("hist", "dev1", [{"input": "in2"}])
    assert [r.input_id for r in store.rows("hist", "dev1")] == ["in1"]
    store.put_proxy_profiles("dev1", {("MEM-BW", 4): {"dram_bytes": 1.0}})
    for key in (("p", "x"), ("p", True), "ab", ("", 1)):
        with pytest.raises(ValueError, match=r"a proxy profile is keyed \(proxy, intensity\)"):
            store.put_proxy_profiles("dev1", {key: {"x": 1}})
    with pytest.raises(ValueError, match=r"a profile is keyed \(variant, input id\) \(the first without '\|'\)"):
        store.put_profiles("hist", "dev1", {"ab": {"x": 1}})
    assert store.proxy_profiles("dev1") == {("MEM-BW", 4): {"dram_bytes": 1.0}} and store.profiles("hist", "dev1") == {}


def test_declared_names_are_lists_of_distinct_names(store):
    """``declare("x", "ab", ...)`` would declare the variants 'a' and 'b'."""
    for variants, features, error, message in (("ab", ["N"], TypeError, "variants are a list of names, got 'ab'"),
                                               ([], ["N"], ValueError, "distinct non-empty names"),
                                               (["a", "a"], ["N"], ValueError, "distinct non-empty names"),
                                               (["a"], "N", TypeError, "features are a list of names, got 'N'")):
        with pytest.raises(error, match=message):
            store.declare("x", variants, features)
    assert store.computations() == []


def test_models_by_computation_finds_every_stored_model_in_one_scan(store):
    model = {"format": 1, "kind": "constant", "variants": ["a"], "input_features": ["n"], "params": {"label": 0}}
    for comp, device in (("plain", "d1"), ("plain", "gpu:0"), ("odd:na*me{x}", "d%2A}"), ("ünï", "d1")):
        store.declare(comp, ["a"], ["n"])
        store.put_model(comp, device, model)
    store.declare("no-model", ["a"], ["n"])
    assert store.models_by_computation() == {"plain": ["d1", "gpu:0"], "odd:na*me{x}": ["d%2A}"], "ünï": ["d1"]}
    assert all(store.models_by_computation()[c] == store.model_devices(c) for c in ("plain", "odd:na*me{x}", "ünï"))
