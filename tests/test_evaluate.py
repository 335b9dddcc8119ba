import numpy as np
import pandas as pd
import pytest

from nitro.dataset import Measurements, load_dataset_dir
from nitro.evaluate import evaluate, split


@pytest.mark.dataset
def test_leave_one_gpu_out_on_the_shared_spmv_data(spmv_dataset):
    r = evaluate(load_dataset_dir(spmv_dataset), methods=["random", "majority", "full_set_svm", "cvdfs"], n_jobs=2)
    assert r["variants"] == ["coo", "csr", "ell", "sellp"] and len(r["devices"]) == 8
    assert r["n_train"] + r["n_test"] == 2138
    assert r["cross_kind_devices"] == ["xeon_gold_6230"]
    assert r["mean"]["random"] < r["mean"]["majority"] < r["mean"]["cvdfs"]
    assert r["mean"]["cvdfs"] >= r["mean"]["full_set_svm"]
    assert all(d["cvdfs"]["seconds"] < 60 for d in r["details"].values())
    assert r["analysis"]["architecture_sensitivity"]["any_pair_differs"] > 0.5


def test_best_source_ceiling_is_the_best_sources_own_fastest_variants():
    """Hand-computed: each target's test inputs run the variant that was fastest on one
    source; the ceiling is the best such source's mean t_best / t_selected."""
    rng = np.random.default_rng(3)
    devices, inputs, variants = [f"dev{i}" for i in range(5)], [f"in{i}" for i in range(40)], ["a", "b", "c"]
    times = pd.DataFrame(rng.uniform(1.0, 3.0, (len(devices) * len(inputs), 3)), columns=variants,
                         index=pd.MultiIndex.from_product([devices, inputs], names=["device", "input"]))
    feats = pd.DataFrame({"size": rng.uniform(1, 100, len(inputs))}, index=inputs)
    dev_feats = pd.DataFrame({"cores": rng.uniform(1, 100, len(devices))}, index=devices)
    m = Measurements(times, feats, dev_feats)
    r = evaluate(m, methods=["best_source_hindsight"])
    data, idx, _, _, test = split(m)
    rows = np.arange(len(test))
    for t in idx:
        T = data.times[t, test]
        manual = max(np.mean(T.min(axis=1) / T[rows, data.times[s, test].argmin(axis=1)]) for s in idx if s != t)
        assert np.isclose(r["targets"][data.devices[t]]["best_source_hindsight"], 100 * manual)
