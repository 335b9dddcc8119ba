"""Selectors side by side on the shared SpMV data (leave-one-GPU-out, a subset of devices)."""
import json

import pytest

from nitro.cli import main
from nitro.comparison import format_comparison
from nitro.dataset import load_dataset_dir
from nitro.evaluate import evaluate

GPUS = ["tesla_k40m", "tesla_p100", "titan_v", "tesla_v100_sxm2"]


@pytest.mark.dataset
@pytest.mark.slow
def test_comparison_table_on_four_gpus(spmv_dataset):
    r = evaluate(load_dataset_dir(spmv_dataset), devices=GPUS, test_size=0.9, max_size=1,
                 methods=["svm", "regression", "costmin", "lsq", "tree", "threshold"])
    c = r["comparison"]
    assert r["methods"] == {} and c["selectors"] == ["svm", "regression", "costmin", "lsq", "tree", "threshold"]
    for use in ("on_device", "cross_device"):
        assert set(c[use]["svm"]) == set(GPUS)
        for name, s in c["summary"][use].items():
            assert 60 < s["percent"] <= 100 and 0 <= s["delta_miss"] <= 1 and s["delta_err"] >= 0
            assert s["fit_s"] > 0 and 0 < s["dispatch_s"] < 0.1
            # % of optimum and Δerr describe the same choices: mean t_best/t ≥ 1/(1 + Δerr) (Jensen)
            assert s["percent"] / 100 >= 1 / (1 + s["delta_err"]) - 1e-9
    assert all(c["device_features_used"][d] for d in GPUS)      # CV-DFS kept some device features
    text = format_comparison(c)
    assert "Δmiss" in text and "cross-device" in text and "regression" in text


@pytest.mark.dataset
def test_evaluate_command_accepts_selector_methods(capsys, spmv_dataset):
    assert main(["evaluate", str(spmv_dataset), "--devices", ",".join(GPUS), "--methods", "tree,threshold,random",
                 "--test-size", "0.85", "--max-subset-size", "1", "--cross-features", "all", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(r["comparison"]["selectors"]) == {"tree", "threshold"} and "random" in r["mean"]
    assert r["comparison"]["cross_features"] == "all"
    assert main(["evaluate", str(spmv_dataset), "--methods", "nope"]) == 2
