import pandas as pd
import pytest

from nitro.dataset import load_dataset_dir
from nitro.measurement import TrainingRow
from nitro.store.csv_io import export_computation, import_computation


def test_export_import_round_trip(store, tmp_path):
    store.declare("hist", ["a", "b"], ["N", "S"])
    store.put_device("dev1", {"cores": {"value": 2.0, "unit": "cores", "source": "query"}})
    store.put_rows("hist", "dev1", [TrainingRow(f"i{k}", {"N": k, "S": 0.5}, {"a": 1.0 + k, "b": None},
                                                {"b": "wrong result"}) for k in range(5)])
    out = export_computation(store, "hist", tmp_path / "ds")
    assert out == {"devices": 1, "inputs": 5, "measurements": 5}
    data = load_dataset_dir(tmp_path / "ds")
    assert list(data.inputs.columns) == ["N", "S"] and data.devices.loc["dev1", "cores"] == 2.0
    import_computation(store, "hist-copy", tmp_path / "ds", variants=["a", "b"])
    rows = store.rows("hist-copy", "dev1")
    assert len(rows) == 5 and rows[0].times["b"] is None and rows[0].best == "a"


def test_malformed_directory_writes_nothing(store, tmp_path):
    pd.DataFrame({"device": ["d"], "input": ["i"], "t": [1.0]}).to_csv(tmp_path / "measurements.csv", index=False)
    with pytest.raises(ValueError, match="needs columns"):
        import_computation(store, "x", tmp_path)
    with pytest.raises(FileNotFoundError):
        import_computation(store, "x", tmp_path / "missing")
    assert store.computations() == []


def test_imports_the_shared_spmv_dataset(store, spmv_dataset):
    result = import_computation(store, "spmv", spmv_dataset)
    assert result["devices"] == 9
    assert len(store.rows("spmv", "tesla_v100_sxm2")) > 2000
    assert store.device("tesla_v100_sxm2")["peak_gbps"]["value"] == 900


def test_the_committed_cpu_dataset_loads():
    """The measurements recorded here with nitro's own tools are a valid dataset."""
    from pathlib import Path

    from nitro.dataset import load_dataset_dir
    root = Path(__file__).resolve().parents[2] / "datasets" / "cpu_amd_epyc_2t"
    for computation, n_variants in (("histogram", 6), ("spmv", 5)):
        m = load_dataset_dir(root / computation)
        assert m.device_ids == ["cpu_amd_epyc_2t"] and len(m.inputs) == 96 and len(m.variants) == n_variants
