"""Boosted trees over the sources' rows and the target's: refitting refining mode's model from
rows that timed only some variants (nitro.transfer.fewshot_trees.TreesRefit)."""
import numpy as np

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
