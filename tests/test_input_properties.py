"""Property-based tests of bad input: feature values of any type, malformed dataset
directories. Each gives a result or one clear error, never a crash, and loses nothing."""
import math
import multiprocessing

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from nitro import TimingPolicy, autotuner, code_variant
from nitro.dispatch import feature_vector
from nitro.row import TrainingRow
from nitro.store.csv_io import import_computation

anything = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10 ** 309), st.floats(),
    st.complex_numbers(), st.text(max_size=6), st.binary(max_size=4), st.lists(st.floats(), max_size=3),
    st.builds(np.array, st.lists(st.floats(), max_size=3)), st.floats(width=32).map(np.float32),
    st.integers(-2 ** 63, 2 ** 63 - 1).map(np.int64), st.just(pd.NA), st.just(object()))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(anything, min_size=1, max_size=4))
def test_feature_values_are_finite_floats_or_an_error_naming_the_feature(values):
    names = [f"f{i}" for i in range(len(values))]
    try:
        out = feature_vector(names, values, "comp, input x: ")
    except (TypeError, ValueError) as exc:
        assert str(exc).startswith("comp, input x: input feature 'f")
        return
    assert len(out) == len(values) and all(isinstance(v, float) and math.isfinite(v) for v in out)


def test_a_bad_feature_stops_tuning_with_a_clear_error_and_loses_nothing(store):
    calls = multiprocessing.get_context("fork").Value("i", 0)

    def plus(x):
        with calls.get_lock():
            calls.value += 1
        return x + 1

    def size(x):
        return float("nan") if x == 3 else float(x)

    cv = code_variant("inc", [plus], {"size": size})
    cv.record, cv.device_id = True, "dev"
    tuner = autotuner("inc", store=store, policy=TimingPolicy(min_repeats=1, max_repeats=1), progress=False)
    tuner.set_training_args(range(6), ids=[f"in{i}" for i in range(6)])
    with pytest.raises(ValueError, match="inc, input in3: input feature 'size' is nan"):
        tuner.measure(cv)
    assert [r.input_id for r in store.rows("inc", "dev")] == ["in0", "in1", "in2"]
    before = calls.value
    tuner.set_training_args([0, 1, 2, 4, 5], ids=["in0", "in1", "in2", "in4", "in5"])
    tuner.measure(cv)                               # resumes: only in4 and in5 are measured
    assert calls.value - before == 2 * 2             # warm-up + one timed call each
    assert len(store.rows("inc", "dev")) == 5


cells = st.one_of(st.floats(), st.integers(-5, 5), st.text(max_size=4), st.none(),
                  st.sampled_from(["", "nan", "inf", "-1", "1e-3"]))
ids = {"device": st.sampled_from(["d1", "d2", None, 7]), "input": st.sampled_from(["i1", "i2", "i3", "", None]),
       "variant": st.sampled_from(["a", "b", 1, None]), "time_s": st.floats(1e-6, 10),
       "N": st.floats(0, 1e6), "S": st.integers(0, 9), "cores": st.integers(1, 64)}


def frames(columns, rows):
    """Tables with some valid-looking ids (so that some imports succeed) and any cells."""
    return st.lists(st.fixed_dictionaries({c: st.one_of(ids[c], ids[c], ids[c], cells) if c in ids else cells
                                           for c in columns}), min_size=1, max_size=rows).map(lambda r: pd.DataFrame(r, columns=columns))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meas=frames(["device", "input", "variant", "time_s"], 8),
       inputs=frames(["input", "N", "S"], 5), devices=frames(["device", "cores", "vendor"], 3),
       drop=st.sampled_from([None, None, None, "measurements", "inputs", "devices"]),
       garbage=st.one_of(st.none(), st.none(), st.none(), st.binary(max_size=30)))
def test_any_dataset_directory_imports_valid_rows_or_raises_and_keeps_the_store(
        store, tmp_path_factory, meas, inputs, devices, drop, garbage):
    store.client.flushall()
    store.declare("keep", ["a"], ["N"])
    store.put_row("keep", "dev", TrainingRow("in0", {"N": 1.0}, {"a": 1.0}))
    d = tmp_path_factory.mktemp("ds")
    for name, frame in (("measurements", meas), ("inputs", inputs), ("devices", devices)):
        if name != drop:
            frame.to_csv(d / f"{name}.csv", index=False)
    if garbage is not None:
        (d / "inputs.csv").write_bytes(garbage)
    try:
        result = import_computation(store, "imported", d)
    except (ValueError, FileNotFoundError) as exc:
        event("refused")
        assert str(d) in str(exc)                         # names the directory or file
        assert "imported" not in store.computations()   # nothing written
    else:
        event("imported")
        meta = store.meta("imported")
        assert meta["variants"] and meta["features"] and result["rows"] > 0
        assert result["rows"] == sum(len(store.rows("imported", dev)) for dev in store.devices("imported"))
    assert [r.input_id for r in store.rows("keep", "dev")] == ["in0"]   # nothing lost


@pytest.mark.parametrize("empty", ["measurements", "inputs", "devices"])
def test_empty_tables_are_refused_before_anything_is_written(store, tmp_path, empty):
    tables = {"measurements": "device,input,variant,time_s\nd1,i1,a,0.5\n",
              "inputs": "input,N\ni1,3\n", "devices": "device,cores\nd1,4\n"}
    tables[empty] = tables[empty].splitlines()[0] + "\n"          # the header only
    for name, text in tables.items():
        (tmp_path / f"{name}.csv").write_text(text)
    if empty == "devices":                                          # devices are optional data
        assert import_computation(store, "x", tmp_path) == {"devices": 1, "rows": 1, "notes": [
            "device 'd1' has no row in devices.csv: its rows are stored without device features; "
            "tune-from-source cannot use it as a source until its features are recorded"]}
        return
    with pytest.raises(ValueError, match=str(tmp_path)):
        import_computation(store, "x", tmp_path)
    assert store.computations() == []
    assert feature_vector([], []) == []
