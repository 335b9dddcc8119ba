"""Offline replay of refining mode (``nitro evaluate DIR --online``) on small synthetic
measurements, written as a dataset directory, and on the shared SpMV data where present."""
import json

import numpy as np
import pandas as pd
import pytest

from nitro.cli import main
from nitro.dataset import Measurements, load_dataset_dir
from nitro.online import RecordedFailure, RecordedRun, evaluate_online, format_online

SPEED = {"dev0": 0.5, "dev1": 1.0, "dev2": 2.0, "dev3": 4.0, "odd": 1.5}


def measurements(seed=0) -> Measurements:
    """Variant ``lin`` costs x·speed, ``flat`` a constant, ``mid`` in between; on every device
    but ``odd`` lin wins on small inputs, on ``odd`` (a behaviour no source shows) it wins on
    large ones, so its zero-shot model is wrong there and only target timings can tell."""
    rng = np.random.default_rng(seed)
    x = np.exp(rng.uniform(0, np.log(400), 160))
    inputs = [f"in{i}" for i in range(len(x))]
    rows = []
    for dev, s in SPEED.items():
        lin = (40.0 / x if dev == "odd" else x) * s * 1e-3
        noise = rng.uniform(0.97, 1.03, (len(x), 3))
        rows.append(np.column_stack([lin, np.full_like(x, 0.02), 0.5 * lin + 0.012]) * noise)
    times = pd.DataFrame(np.vstack(rows), columns=["lin", "flat", "mid"],
                         index=pd.MultiIndex.from_product([list(SPEED), inputs], names=["device", "input"]))
    return Measurements(times, pd.DataFrame({"x": x}, index=inputs),
                        pd.DataFrame({"speed": list(SPEED.values())}, index=list(SPEED)))


def test_replay_stays_in_budget_and_learns_what_no_source_shows():
    r = evaluate_online(measurements(), passes=4, budget=0.05, candidates=None, refit_every=4)
    assert set(r["targets"]) == set(SPEED) and r["n_train"] + r["n_test"] == 160
    for dev, t in r["targets"].items():
        assert t["explored_calls"] <= 0.05 * t["stream_calls"] + 1
        assert t["stream_time_ratio"] >= 1.0 and t["zero_shot_stream_time_ratio"] >= 1.0
        assert t["refits"] >= 1 and t["refit_errors"] == 0
    odd = r["targets"]["odd"]
    assert odd["zero_shot_percent"] < 80 and odd["refined_percent"] > odd["zero_shot_percent"] + 10
    assert r["mean"]["refined_percent"] > r["mean"]["zero_shot_percent"]
    assert np.isclose(r["worst"]["refined_percent"], min(t["refined_percent"] for t in r["targets"].values()))
    text = format_online(r)
    assert "odd" in text and "mean" in text and "explored %" in text


def test_replay_is_deterministic_for_a_seed():
    a = evaluate_online(measurements(), stream_length=300, budget=0.05, seed=3)
    b = evaluate_online(measurements(), stream_length=300, budget=0.05, seed=3)
    strip = lambda r: {d: {k: v for k, v in t.items() if k != "seconds"} for d, t in r["targets"].items()}  # noqa: E731
    assert strip(a) == strip(b)


def test_recorded_run_reads_times_and_fails_where_none_is_recorded():
    run = RecordedRun(np.array([0.5, np.nan]), {"a": 0, "b": 1})
    assert run("a") == (None, 0.5)
    with pytest.raises(RecordedFailure, match="b has no recorded time"):
        run("b")


def _write_dir(m: Measurements, path):
    m.devices.rename_axis("device").to_csv(path / "devices.csv")
    m.inputs.rename_axis("input").to_csv(path / "inputs.csv")
    long = m.times.stack().rename("time_s").reset_index().rename(columns={"level_2": "variant"})
    long.to_csv(path / "measurements.csv", index=False)


def test_cli_evaluate_online_prints_json(tmp_path, capsys):
    _write_dir(measurements(), tmp_path)
    assert main(["evaluate", str(tmp_path), "--online", "--json", "--stream", "200", "--budget", "0.05",
                 "--candidates", "0"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["refiner"]["candidates"] is None and r["stream_length"] == 200
    assert all(t["stream_calls"] == 200 for t in r["targets"].values())
    assert main(["evaluate", str(tmp_path), "--online", "--methods", "cvdfs"]) == 2
    assert "--online" in capsys.readouterr().err


@pytest.mark.dataset
def test_replay_on_the_shared_spmv_data(spmv_dataset):
    m = load_dataset_dir(spmv_dataset)
    gpus = ["tesla_k20xm", "tesla_k40m", "tesla_p100", "tesla_v100_sxm2"]
    r = evaluate_online(m, devices=gpus, stream_length=1500, budget=0.02)
    assert r["variants"] == ["coo", "csr", "ell", "sellp"] and r["devices"] == gpus
    for t in r["targets"].values():
        assert t["explored_calls"] <= 0.02 * 1500 + 1 and t["explored_calls"] > 0
    assert r["mean"]["refined_percent"] > r["mean"]["zero_shot_percent"]
