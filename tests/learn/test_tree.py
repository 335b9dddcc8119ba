"""Starchart's explainable partition: which features split first, where each variant wins,
power as a second target, and focused (iterative) sampling."""
import re

import numpy as np
import pytest

from nitro.learn import TreeSelector, focused_sampling
from nitro.learn.tree import plot_partition

VARIANTS = ["serial", "parallel", "gpu"]


def times_of(X):
    """serial wins below size 1e4, parallel up to 1e6 unless the input is skewed, gpu above."""
    size, skew = X[:, 0], X[:, 1]
    return np.column_stack([size * 1e-8 + 1e-6, size * 2e-9 * (1 + 4 * (skew > 2)) + 5e-5, size * 1e-10 + 1e-3])


def inputs(n, seed):
    rng = np.random.default_rng(seed)
    return np.column_stack([10 ** rng.uniform(2, 8, n), rng.uniform(0, 4, n), rng.normal(size=n)])


def test_explain_names_the_deciding_features_and_where_each_variant_wins():
    X = inputs(300, 0)
    sel = TreeSelector().fit(X, times_of(X))
    r = sel.explain(["size", "skew", "noise"], VARIANTS)
    assert r["features_by_first_split"][0] == "size" and "noise" not in r["importance"]
    assert set(r["wins"]) == set(VARIANTS)
    serial = [l for l in r["leaves"] if l["winner"] == "serial"]
    assert all(l["conditions"]["size"][1] <= 2e5 for l in serial)     # gpu takes over above ~1e5
    assert "size <=" in r["tree_text"] and "→ gpu" in r["tree_text"]
    test = inputs(500, 1)
    assert (sel.predict(test) == times_of(test).argmin(axis=1)).mean() > 0.9


def test_stopping_threshold_bounds_the_tree():
    X = inputs(300, 0)
    T = times_of(X) * np.exp(np.random.default_rng(0).normal(0, 0.3, (300, 3)))
    coarse = TreeSelector(min_gain=0.05).fit(X, T)
    fine = TreeSelector(min_gain=0.0).fit(X, T)
    assert coarse.tree_.get_n_leaves() < fine.tree_.get_n_leaves()


def test_power_queries():
    X = inputs(300, 2)
    T = times_of(X)
    power = np.tile([20.0, 80.0, 250.0], (300, 1))       # watts of each variant
    sel = TreeSelector().fit(X, T, power=power)
    big = np.array([[1e8, 1.0, 0.0]])
    assert sel.predict(big)[0] == 2 and sel.choose_under(big, 100.0)[0] == 1
    assert sel.choose_under(big, 10.0)[0] == -1
    r = sel.fastest_region_under(X, 100.0, ["size", "skew", "noise"], VARIANTS)
    assert r["variant"] in ("serial", "parallel") and r["watts"] <= 100.0 and "size" in r["conditions"]
    with pytest.raises(ValueError, match="power"):
        TreeSelector().fit(X, T).choose_under(big, 100.0)


@pytest.mark.parametrize("watts", [float("nan"), 0.0, -5.0, "100 W", None, True])
def test_a_power_budget_that_is_not_a_positive_number_is_refused_naming_it(watts):
    # a NaN (a failed power reading) answered "no variant fits" (-1) for every input, without a word
    X = inputs(100, 3)
    sel = TreeSelector().fit(X, times_of(X), power=np.tile([20.0, 80.0, 250.0], (100, 1)))
    for query in (sel.choose_under, sel.fastest_region_under):
        with pytest.raises(ValueError, match=f"a power budget is a positive number of watts, got {re.escape(repr(watts))}"):
            query(X[:3], watts)
    assert sel.choose_under(X[:3], float("inf")).tolist() == sel.predict(X[:3]).tolist()


def test_focused_sampling_measures_where_the_choice_is_unsettled():
    pool = inputs(2000, 3)
    measured = []

    def measure(idx):
        measured.append(len(idx))
        return times_of(pool[idx])

    sel, chosen = focused_sampling(pool, measure, n_initial=20, batch=20, rounds=3, seed=0)
    assert measured == [20, 20, 20, 20] and len(set(chosen.tolist())) == 80
    test = inputs(1000, 4)
    truth = times_of(test).argmin(axis=1)
    initial = TreeSelector().fit(pool[chosen[:20]], times_of(pool[chosen[:20]]))
    assert (sel.predict(test) == truth).mean() > (initial.predict(test) == truth).mean()
    # the first picks come from the leaf with the largest remaining SSE ...
    t = initial.tree_.tree_
    leaves = initial.tree_.apply(pool)
    sse = {l: t.impurity[l] * t.n_node_samples[l] for l in np.unique(leaves)}
    assert leaves[initial.focus(pool, 1)[0]] == max(sse, key=sse.get)
    # ... or, for Starchart's focus on the best region, from the leaf with the fastest best time
    fastest = min(initial.leaf_best_log_time_, key=initial.leaf_best_log_time_.get)
    assert leaves[initial.focus(pool, 1, by="best")[0]] == fastest


def test_plot_partition_writes_a_png(tmp_path):
    X = inputs(200, 6)
    sel = TreeSelector().fit(X, times_of(X))
    path = plot_partition(sel, ["size", "skew", "noise"], VARIANTS, tmp_path / "tree.png")
    assert (tmp_path / "tree.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.endswith("tree.png")
