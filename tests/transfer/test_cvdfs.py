"""CV-DFS (``nitro.transfer.cvdfs``) on data planted with a known answer: the device features it
finds, its subsets and held-out scores, and what it reads back instead of fitting again."""
import numpy as np
import pytest

from nitro.transfer.cvdfs import cv_dfs
from nitro.transfer.data import TransferData
from nitro.transfer.prepare import Prepared

from tests.transfer.helpers import planted


@pytest.mark.parametrize("selection", ["frequency", "ensemble"])
def test_cv_dfs_recovers_the_planted_feature(selection):
    data = TransferData.from_measurements(planted())
    prep = Prepared.build(data, list(range(7)), np.arange(len(data.inputs)))
    r = cv_dfs(prep, max_size=2, k=2, selection=selection, n_ensemble=3, progress=False)
    assert r.models_trained == 7 * 10
    assert "cache_kb" in r.features and "atomic_units" in r.features
    if selection == "frequency":
        assert set(r.features) == {"cache_kb", "atomic_units"}
    assert min(r.scores.values()) > 0.9


def test_a_second_search_of_one_prep_and_a_refit_of_the_same_rows_give_what_a_fresh_one_gives(monkeypatch):
    """`nitro evaluate` runs both selections on one prep, and fits the same held-out full-set SVMs
    for target t / source s and for target s / source t: both are read back, not redone."""
    import nitro.memo as memo
    import nitro.transfer.baselines as baselines
    data = TransferData.from_measurements(planted())
    fits = []
    monkeypatch.setattr(baselines.SVMSelector, "fit", lambda self, X, y, _fit=baselines.SVMSelector.fit:
                        fits.append(len(X)) or _fit(self, X, y))
    prep = Prepared.build(data, list(range(7)), np.arange(len(data.inputs)))
    cv_dfs(prep, max_size=2, progress=False)
    cv_dfs(prep, max_size=2, selection="frequency", progress=False)
    assert len(fits) == 7 and len(prep.held_out_svm) == 1     # the second selection reads the choices back
    cv_dfs(Prepared.build(data, list(range(7)), np.arange(len(data.inputs))), max_size=2, progress=False)
    assert len(fits) == 14                                 # outside memo.kept nothing is kept
    fits.clear()
    with memo.kept():
        _kept_within(baselines, data, fits)
    assert memo._kept is None


def _kept_within(baselines, data, fits):
    prep = Prepared.build(data, list(range(7)), np.arange(len(data.inputs)))
    first = cv_dfs(prep, max_size=2, progress=False)
    assert len(fits) == 7 and len(prep.searched) == 1     # one SVM per held-out source
    again = cv_dfs(prep, max_size=2, selection="frequency", k=2, progress=False)
    assert len(fits) == 7 and len(prep.searched) == 1     # the scores and the SVMs read back
    fresh = cv_dfs(Prepared.build(data, list(range(7)), np.arange(len(data.inputs))), max_size=2,
                   selection="frequency", k=2, progress=False)
    assert again.features == fresh.features and again.held_out == fresh.held_out
    assert first.held_out.keys() == again.held_out.keys()
    other = Prepared.build(data, [0, 1, 2, 3, 4, 5], np.arange(len(data.inputs)), extra_devices=[6])
    baselines.full_set_svm_choices(data, [1, 2, 3, 4, 5], other.train, 0, other.train)
    assert len(fits) == 8             # sources 1-5 were not fitted together before
    baselines.full_set_svm_choices(data, [1, 2, 3, 4, 5], other.train, 6, other.train)
    assert len(fits) == 8             # the same rows for another device: the same SVM


def test_select_subsets_by_mean_score_or_by_the_features_of_each_best_subset():
    from nitro.transfer.cvdfs import select_subsets
    cand = [(0,), (1,), (2,), (0, 1)]
    S = np.array([[0.9, 0.5, 0.1, 0.8],
                  [0.5, 0.2, 0.3, 0.7],
                  [0.4, 0.2, 0.9, 0.35]])
    assert select_subsets(S, cand, "ensemble", k=1, n_ensemble=2) == [(0, 1), (0,)]
    assert select_subsets(S[1:], cand, "ensemble", k=1, n_ensemble=1) == [(2,)]   # without the first row
    # best subsets: (0,), (0, 1), (2,): feature 0 twice, 1 and 2 once (1 ahead on its subsets' mean)
    assert select_subsets(S, cand, "frequency", k=2, n_ensemble=1) == [(0, 1)]


def test_a_new_family_is_validated_by_family_even_where_some_source_has_none():
    """A source without a family is a family of its own; only the target's must be known."""
    from nitro.transfer.cvdfs import family_groups
    family = {0: "x", 1: "y", 2: "y", 3: None, 4: "z"}
    assert family_groups(family, [1, 2, 3, 4], 0) == {1: "y", 2: "y", 4: "z"}
    assert family_groups(family, [0, 2, 3, 4], 1) is None                 # y is a source's family
    assert family_groups(family, [0, 1, 2, 4], 3) is None                 # the target's is unknown


@pytest.mark.parametrize("grouped", [False, True])
def test_each_source_held_out_is_scored_with_subsets_chosen_without_it(grouped):
    """The held-out quality estimates the whole procedure on a new device: the subsets a
    source is scored with are chosen without its own scores (and, grouped, its family's),
    else it would be scored with subsets picked for doing well on it."""
    from nitro.metrics import fraction_of_optimum
    from nitro.transfer.cvdfs import _score_all, held_out_sources, predict_held_out, select_subsets, subsets_upto
    data = TransferData.from_measurements(planted())
    prep = Prepared.build(data, list(range(1, 7)), np.arange(len(data.inputs)), extra_devices=[0])
    groups = {s: "ab"[s % 2] for s in prep.sources} if grouped else None
    r = cv_dfs(prep, max_size=2, n_ensemble=2, progress=False, groups=groups)
    cand = subsets_upto(prep.features, 2)
    S = np.array([_score_all(prep, t, cand, 1.0, groups) for t in prep.sources])
    for i, t in enumerate(prep.sources):
        rest = held_out_sources(prep, t, groups)
        used = select_subsets(S[[prep.sources.index(s) for s in rest]], cand, "ensemble", 1, 2)
        pred = predict_held_out(prep, t, used, 1.0, groups)
        quality = fraction_of_optimum(data.times[t, prep.train], pred.argmax(axis=1))
        assert np.isclose(r.held_out[data.devices[t]]["quality"], quality)


def test_cv_dfs_leaves_out_a_feature_constant_over_the_sources():
    """Such a feature cannot show its effect (the device kernel drops it), so a subset with it
    would repeat the subset without it; the target may still differ in it."""
    m = planted()
    m.devices["ecc"] = 1.0
    m.devices.loc["dev0", "ecc"] = 0.0                   # only the target differs
    data = TransferData.from_measurements(m)
    prep = Prepared.build(data, list(range(1, 7)), np.arange(len(data.inputs)), extra_devices=[0])
    r = cv_dfs(prep, max_size=2, progress=False)
    assert r.settings["candidates"] == 4 and r.models_trained == 6 * 10
    assert "ecc" not in r.features and "ecc" not in r.frequencies


def test_cv_dfs_with_too_few_sources_names_them_and_the_way_out():
    data = TransferData.from_measurements(planted())
    prep = Prepared.build(data, [1, 2], np.arange(len(data.inputs)), extra_devices=[0])
    with pytest.raises(ValueError, match=r"at least 3 source devices, got 2 \(dev1, dev2\).*search_based_dfs off"):
        cv_dfs(prep, progress=False)


def test_cv_dfs_scores_on_all_rows_up_to_its_limit_then_on_a_fixed_sample():
    from nitro.transfer.cvdfs import score_rows
    np.testing.assert_array_equal(score_rows(50, limit=100), np.arange(50))
    rows = score_rows(1000, limit=100, seed=1)
    assert len(rows) == 100 and len(np.unique(rows)) == 100 and rows.max() < 1000 and np.all(np.diff(rows) > 0)
    np.testing.assert_array_equal(rows, score_rows(1000, limit=100, seed=1))
