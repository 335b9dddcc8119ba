"""The stored form of training rows: the C fast path reads exactly what the reference reading
(Python's JSON and ``TrainingRow.from_dict``) reads, a bad row in a batch is named, and a row
that could not be read back is refused before it is written."""
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nitro.row import TrainingRow
from nitro.store import StoreError
from nitro.store.rowcodec import _decode_slowly, decode_rows, decoder, encode_rows

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                      max_leaves=8)
row_like = st.fixed_dictionaries(
    {"input": st.text(max_size=4) | scalars, "features": st.dictionaries(st.text(max_size=3), scalars, max_size=3),
     "times": st.dictionaries(st.sampled_from(["a", "b"]), scalars, max_size=2)},
    optional={"failed": st.dictionaries(st.text(max_size=3), scalars, max_size=2) | values,
              "schema": st.integers(-1, 3) | scalars, "best": values})


@settings(max_examples=400, deadline=None)
@given(data=row_like, named=st.booleans())
def test_the_fast_path_accepts_only_what_the_reference_reading_accepts_with_the_same_row(data, named):
    raw = json.dumps(data, allow_nan=True).encode()
    try:
        fast = decoder(("", "a", "b", "N"), ("a", "b"))(raw) if named else decoder()(raw)
    except Exception:
        return      # the batch is then read by the reference path itself
    slow = _decode_slowly("c/d", b"f", raw)
    assert TrainingRow(fast.input, fast.features, fast.times, fast.failed) == slow
    assert all(type(v) is float for v in fast.features.values())


def test_a_computations_names_are_one_object_in_every_row_and_other_names_still_read():
    rows = [TrainingRow(f"in{i}", {"rows": 1.0, "cols": 2.0}, {"coo": 1.0, "sellp": None}) for i in range(3)]
    batch = [(r.input_id.encode(), raw) for r, raw in zip(rows, encode_rows(rows))]
    named = decode_rows("c/d", batch, decoder(("rows", "cols"), ("coo", "sellp")))
    assert named == rows
    assert all(a is b for r in named[1:] for a, b in zip([*r.features, *r.times], [*named[0].features, *named[0].times]))
    assert decode_rows("c/d", batch, decoder(("rows",), ("coo",))) == rows    # a name not declared: read all the same


def test_a_bad_row_in_a_batch_is_named_and_the_good_ones_read_alike():
    good = [TrainingRow(f"in{i}", {"N": float(i), "M": i}, {"a": 1.0, "b": None}, {"b": "wrong result"})
            for i in range(5)]
    batch = [(r.input_id.encode(), raw) for r, raw in zip(good, encode_rows(good))]
    assert decode_rows("c/d", batch) == good
    assert decode_rows("c/d", batch[:2] + [(b"in9", b'{"input":"in9","features":{"N":"2.5"},"times":{"a":1}}')]) \
        == good[:2] + [TrainingRow("in9", {"N": 2.5}, {"a": 1.0})]     # numbers as text: read as before
    for raw, problem in ((b'{"input":"bad","features":{"N":1e999},"times":{}}', "not finite"),
                         (b'{"input":"bad","features":{},"times":{"a":-1.0}}', "not negative"),
                         (b'{"input":"bad","features":{}}', "malformed training row"),
                         (b'{"input":"bad","features":{},"times":{},"schema":2}', "schema version 2"),
                         (b'{"input":"other","features":{},"times":{}}', "another input's id"),
                         (b"\x80garbage", "malformed training row c/d/bad")):
        with pytest.raises(StoreError, match=problem) as err:
            decode_rows("c/d", batch[:3] + [(b"bad", raw)] + batch[3:])
        assert "c/d/bad" in str(err.value)


def test_rows_that_could_not_be_read_back_are_refused_by_name():
    ok = TrainingRow("ok", {"N": 1.0}, {"a": 1.0})
    for bad, problem in ((TrainingRow("nan", {"N": math.nan}, {"a": 1.0}), "'nan' holds a value that is not a finite number.*feature 'N'"),
                         (TrainingRow("neg", {"N": 1.0}, {"a": -2.0}), "'neg' holds .*time of 'a'"),
                         (TrainingRow("inf", {"N": 1.0}, {"a": math.inf}), "'inf' holds .*time of 'a'"),
                         (TrainingRow("big", {"N": 10 ** 400}, {"a": 1.0}), "'big' holds .*feature 'N'"),
                         (TrainingRow("txt", {"N": "1"}, {"a": 1.0}), "'txt' holds .*feature 'N'"),
                         (TrainingRow("", {"N": 1.0}, {"a": 1.0}), "input id must be a non-empty string"),
                         (TrainingRow("why", {"N": 1.0}, {"a": None}, {"a": 3}), "'why': failure reasons must be strings")):
        with pytest.raises(ValueError, match=problem):
            encode_rows([ok, bad, ok])


def test_numpy_numbers_and_overflowing_sums_are_stored_as_plain_numbers():
    rows = [TrainingRow("np", {"N": np.float64(2.5), "K": np.int64(3), "F": np.float32(0.5)}, {"a": np.float64(1e-3)}),
            TrainingRow("huge", {"N": 1.5e308, "M": 1.5e308}, {"a": 1e308, "b": 1e308})]   # sums overflow, values do not
    [first, second] = encode_rows(rows)
    assert json.loads(first) == {"input": "np", "features": {"N": 2.5, "K": 3, "F": 0.5}, "times": {"a": 1e-3},
                                 "failed": {}, "best": "a", "schema": 1}
    assert decode_rows("c/d", [(b"np", first), (b"huge", second)])[1] == rows[1]
