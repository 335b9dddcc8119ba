import numpy as np

from nitro.learn.preprocessing import LogHeavyTails, input_units


def test_a_feature_in_large_units_is_taken_in_a_unit_of_its_own():
    """Counts in millions (values below 1 across decades) get their 5th percentile as unit, so
    that the signed log compresses them as it does counts; other columns keep unit 1."""
    rng = np.random.default_rng(0)
    counts = np.exp(rng.uniform(np.log(50), np.log(5e6), 500))
    X = np.column_stack([counts, counts / 1e6, rng.uniform(0, 1, 500), -counts / 1e6])
    units = input_units(X)
    assert units[0] == 1.0 and units[2] == 1.0
    assert np.isclose(units[1], np.percentile(counts / 1e6, 5)) and np.isclose(units[3], units[1])


def test_a_logged_column_in_large_units_is_logged_in_its_unit():
    """Sizes in millions are logged as the counts are (the same transform up to a constant),
    so that an RBF kernel sees the same distances; a column of counts keeps unit 1."""
    rng = np.random.default_rng(1)
    counts = np.exp(rng.uniform(np.log(50), np.log(5e6), 300))
    t = LogHeavyTails().fit(np.column_stack([counts, counts / 1e6]))
    assert t.unit_[0] == 1.0 and np.isclose(t.unit_[1], np.percentile(counts / 1e6, 5))
    Z = t.transform(np.column_stack([counts, counts / 1e6]))
    big = counts > 1e5                       # where log1p(x) ≈ log(x) for both columns
    assert np.allclose(np.diff(Z[big, 0]), np.diff(Z[big, 1]), atol=1e-2)
    assert t.export()["unit"][1] == t.unit_[1] and "unit" not in LogHeavyTails().fit(counts[:, None]).export()
