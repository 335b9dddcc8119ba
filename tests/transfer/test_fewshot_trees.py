"""Boosted trees over the sources' rows and the target's: refitting refining mode's model from
rows that timed only some variants (nitro.transfer.fewshot_trees.TreesRefit)."""
import numpy as np
import pytest

from nitro.metrics import fraction_of_optimum
from nitro.online import zero_shot_model
from nitro.transfer.data import TransferData
from nitro.transfer.fewshot_trees import TreesRefit
from nitro.transfer.prepare import Prepared


def test_trees_refit_learns_the_target_from_rows_that_timed_two_variants_each(odd_target):
    data = TransferData.from_measurements(odd_target(n_inputs=200))
    t, sources = data.device_index("odd"), [data.device_index(d) for d in ("dev0", "dev1", "dev2", "dev3")]
    train, test = np.arange(0, 200, 2), np.arange(1, 200, 2)
    prep = Prepared.build(data, sources, train, extra_devices=[t])
    base = zero_shot_model(data, sources, train, t, prep=prep)
    refit = TreesRefit(data, sources, prep.train, t, prep.features)
    X = data.X[train[:40]]
    pairs = data.times[t, train[:40]].copy()
    pairs[:, 2] = np.nan                                 # every row ran lin and flat, never mid
    assert refit(base, X, np.where(np.arange(3) == 0, pairs, np.nan)) is None   # one variant per row: nothing to learn
    model = refit(base, X, pairs)
    assert model.kind == "gbt" and model.variants == list(data.variants)
    assert model.device_features == {"speed": float(data.D[t, prep.features[0]])}
    zero = fraction_of_optimum(data.times[t, test], base.predict_index(data.X[test]))
    refined = fraction_of_optimum(data.times[t, test], model.predict_index(data.X[test]))
    assert zero < 0.8 and refined > zero + 0.1
    assert model.provenance["target_rows"] == 40 and model.provenance["base"] == base.provenance


def test_source_inputs_keep_every_input_up_to_the_row_bound_and_sample_the_same_ones_beyond():
    from nitro.transfer.fewshot_trees import MAX_SOURCE_INPUTS, MAX_SOURCE_ROWS, source_inputs
    small = np.arange(0, 2138, 2)                         # the SpMV data's 1,069 training inputs, 7 sources
    assert source_inputs(small, 7) is not None and np.array_equal(source_inputs(small, 7), small)
    train = np.arange(10, 30010, 3)                        # 10,000 inputs
    assert len(source_inputs(train, 3)) == MAX_SOURCE_INPUTS             # few sources: the per-source bound
    many = source_inputs(train, 11)
    assert len(many) == MAX_SOURCE_ROWS // 11 and 11 * len(many) <= MAX_SOURCE_ROWS
    assert np.isin(many, train).all() and (np.diff(many) > 0).all()
    assert np.array_equal(many, source_inputs(train, 11)) and not np.array_equal(many, source_inputs(train, 11, 1))
    with pytest.raises(ValueError, match="at least one source"):
        source_inputs(train, 0)


def test_bounded_source_rows_keep_every_target_row_weighted_as_one_source(odd_target, monkeypatch):
    from nitro.transfer import fewshot_trees
    data = TransferData.from_measurements(odd_target(n_inputs=400))
    t, sources = data.device_index("odd"), [data.device_index(d) for d in ("dev0", "dev1", "dev2", "dev3")]
    train, test = np.arange(0, 400, 2), np.arange(1, 400, 2)
    monkeypatch.setattr(fewshot_trees, "MAX_SOURCE_ROWS", 4 * 40)     # 40 of the 200 inputs per source
    picks = train[::10]                                                # 20 target rows, all kept
    est = fewshot_trees.fit_few_shot_trees(data, sources, train, t, data.X[picks], data.times[t, picks], [0])
    X_test = np.column_stack([data.X[test], np.full(len(test), data.D[t, 0])])
    assert fraction_of_optimum(data.times[t, test], est.predict(X_test)) > 0.9   # the sources alone: lin on small inputs
