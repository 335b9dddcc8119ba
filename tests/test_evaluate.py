import pytest

from nitro.dataset import load_dataset_dir
from nitro.evaluate import evaluate


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
