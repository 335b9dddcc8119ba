"""The training row: its best variant, its merge over a stored row, and its validation."""
import math

import pytest

from nitro.row import TrainingRow


def test_best_is_the_fastest_finite_time_first_listed_among_equals():
    assert TrainingRow("x", {}, {"a": 2.0, "b": 1.0, "c": 1.0}).best == "b"
    assert TrainingRow("x", {}, {"a": None, "b": math.inf}).best is None
    assert TrainingRow("x", {}, {"a": None, "b": 3.0}).time_vector(["b", "a", "z"])[0] == 3.0
    assert all(math.isnan(t) for t in TrainingRow("x", {}, {"a": None}).time_vector(["a", "z"]))


def test_a_row_written_over_a_stored_one_keeps_what_it_did_not_measure():
    stored = TrainingRow("x", {"n": 1.0}, {"a": 1.0, "b": None, "c": 3.0}, {"b": "raised"})
    new = TrainingRow("x", {"n": 1.0}, {"a": 2.0, "c": None}, {"c": "wrong result"})
    merged = new.over(stored)
    assert merged.times == {"a": 2.0, "c": None, "b": None} and merged.failed == {"c": "wrong result", "b": "raised"}
    assert new.over(None) is new


def test_rows_read_back_are_validated_naming_the_problem():
    row = TrainingRow("x", {"n": 1.0}, {"a": 0.5, "b": None}, {"b": "raised"})
    assert TrainingRow.from_dict(row.to_dict()) == row
    for bad, match in [({"input": "x", "features": {"N": "abc"}, "times": {}}, "malformed training row"),
                       ({"input": "", "features": {}, "times": {}}, "'input' must be a non-empty string"),
                       ({"input": "x", "features": {}, "times": {"a": -1.0}}, "not finite"),
                       ({"features": {}, "times": {}}, "malformed training row")]:
        with pytest.raises(ValueError, match=match):
            TrainingRow.from_dict(bad)
