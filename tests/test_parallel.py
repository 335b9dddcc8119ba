import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest

from nitro.dataset import load_dataset_dir
from nitro.evaluate import evaluate
from nitro.parallel import parallel_backend
from nitro.transfer.cvdfs import cv_dfs
from nitro.transfer.data import TransferData
from nitro.transfer.prepare import Prepared


def _backend_in_use():
    return joblib.parallel.get_active_backend()[0].__class__.__name__


@pytest.mark.parametrize("name, cls", [("threading", "ThreadingBackend"), ("loky", "LokyBackend")])
def test_backend_applies_inside_the_context_only(name, cls):
    with parallel_backend(name, n_jobs=2):
        assert _backend_in_use() == cls
        out = joblib.Parallel()(joblib.delayed(np.square)(i) for i in range(4))
    assert out == [0, 1, 4, 9]


def test_unknown_or_missing_backends_are_named():
    with pytest.raises(ValueError, match="unknown parallel backend 'spark'"):
        parallel_backend("spark")
    if importlib.util.find_spec("ray") is None:
        with pytest.raises(ValueError, match="needs the ray package"):
            parallel_backend("ray")


def write_dataset(directory: Path, n_devices=5, n_inputs=40, seed=0) -> Path:
    """A tiny measurement directory with a known answer: variant ``c`` wins on inputs larger
    than the device's cache, ``a`` or ``b`` (by its atomic units) on the others."""
    rng = np.random.default_rng(seed)
    devices = pd.DataFrame({"device": [f"dev{d}" for d in range(n_devices)],
                            "cache_kb": rng.uniform(200, 2000, n_devices),
                            "atomic_units": [(1.0, 10.0)[d % 2] for d in range(n_devices)],
                            "decoy": rng.uniform(0, 1, n_devices)})
    inputs = pd.DataFrame({"input": [f"in{i}" for i in range(n_inputs)],
                           "size": np.exp(rng.uniform(np.log(50), np.log(5000), n_inputs))})
    meas = []
    for _, dev in devices.iterrows():
        for _, inp in inputs.iterrows():
            big = inp["size"] > dev["cache_kb"]
            best = "c" if big else ("a" if dev["atomic_units"] > 5 else "b")
            meas += [{"device": dev["device"], "input": inp["input"], "variant": v,
                      "time_s": (1.0 if v == best else 2.0) * (1 + 0.01 * rng.random())} for v in "abc"]
    directory.mkdir(parents=True, exist_ok=True)
    devices.to_csv(directory / "devices.csv", index=False)
    inputs.to_csv(directory / "inputs.csv", index=False)
    pd.DataFrame(meas).to_csv(directory / "measurements.csv", index=False)
    return directory


def cvdfs_and_evaluation(directory: Path) -> tuple:
    m = load_dataset_dir(directory)
    data = TransferData.from_measurements(m)
    prep = Prepared.build(data, list(range(len(data.devices))), np.arange(len(data.inputs)))
    return cv_dfs(prep, max_size=2, progress=False), evaluate(m, methods=["cvdfs", "full_set"], max_size=2)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["dask", "ray"])
def test_cluster_backends_run_on_worker_processes_and_choose_as_the_default(backend, tmp_path):
    if importlib.util.find_spec("distributed" if backend == "dask" else backend) is None:
        pytest.skip(f"{backend} is not installed here (pip install 'nitro[{backend}]'; "
                    "Ray publishes wheels for a subset of platforms and Python versions)")
    directory = write_dataset(tmp_path / "data")
    base_cv, base_ev = cvdfs_and_evaluation(directory)
    with parallel_backend(backend, n_jobs=2):
        pids = joblib.Parallel()(joblib.delayed(os.getpid)() for _ in range(4))
        cv, ev = cvdfs_and_evaluation(directory)
    assert os.getpid() not in pids                      # worker processes, not threads
    assert (cv.features, cv.subsets, cv.frequencies) == (base_cv.features, base_cv.subsets, base_cv.frequencies)
    assert cv.scores.keys() == base_cv.scores.keys()
    assert np.allclose(list(cv.scores.values()), list(base_cv.scores.values()), rtol=1e-9)
    assert ev["targets"] == base_ev["targets"]          # the same choices give the same % of optimum
    assert {d: x["cvdfs"]["features"] for d, x in ev["details"].items()} == \
        {d: x["cvdfs"]["features"] for d, x in base_ev["details"].items()}


@pytest.mark.slow
def test_nitro_evaluate_with_the_dask_backend(tmp_path):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (pip install 'nitro[dask]')")
    directory = write_dataset(tmp_path / "data")
    runs = []
    for extra in ([], ["--backend", "dask"]):
        out = subprocess.run([sys.executable, "-m", "nitro.cli", "evaluate", str(directory), "--methods",
                              "cvdfs,full_set", "--max-subset-size", "2", "--json", *extra],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout))
    assert runs[0]["targets"] == runs[1]["targets"]


def test_a_cluster_address_is_only_for_cluster_backends():
    with pytest.raises(ValueError, match="cluster address is for the dask and ray backends"):
        parallel_backend("loky", address="tcp://127.0.0.1:8786")
