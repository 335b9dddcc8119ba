"""The synthetic table generator: dataset layout, labelled synthetic, crossovers to learn."""
import numpy as np
import pytest

from nitro.dataset import load_dataset_dir
from nitro.synthetic import VARIANTS, generate


def test_generated_table_loads_and_has_crossovers(tmp_path):
    info = generate(tmp_path / "t", 300, n_devices=4, seed=1)
    assert info["synthetic"] and "SYNTHETIC" in (tmp_path / "t" / "README.md").read_text()
    m = load_dataset_dir(tmp_path / "t")
    assert m.variants == sorted(VARIANTS) and len(m.device_ids) == 4 and len(m.inputs) == 300
    assert m.device_metadata("arch") and "peak_gbps" in m.device_feature_names
    best = {d: np.nanargmin(m.for_device(d).to_numpy(), axis=1) for d in m.device_ids}
    assert all(len(np.unique(b)) >= 3 for b in best.values())             # the input decides
    assert len({tuple(b) for b in best.values()}) == 4                      # and so does the device


def test_generation_is_deterministic_and_checks_its_size(tmp_path):
    generate(tmp_path / "a", 50, seed=3)
    generate(tmp_path / "b", 50, seed=3)
    assert (tmp_path / "a" / "measurements.csv.gz").read_bytes() != b""
    a, b = load_dataset_dir(tmp_path / "a"), load_dataset_dir(tmp_path / "b")
    assert a.times.equals(b.times)
    with pytest.raises(ValueError, match="at least 20 inputs"):
        generate(tmp_path / "c", 5)


def test_a_directory_holding_a_dataset_is_not_written_over(tmp_path):
    """A real measurement directory named by mistake keeps its files; and a directory with both
    a plain and a gzipped copy of one file is refused on reading, as either could be stale."""
    generate(tmp_path / "real", n_inputs=20, n_devices=2, seed=1)
    before = {p.name: p.read_bytes() for p in (tmp_path / "real").iterdir()}
    with pytest.raises(ValueError, match=r"already holds a dataset \(devices.csv, inputs.csv.gz, measurements.csv.gz\)"):
        generate(tmp_path / "real", n_inputs=20, n_devices=4, seed=2)
    assert {p.name: p.read_bytes() for p in (tmp_path / "real").iterdir()} == before
    (tmp_path / "real" / "inputs.csv").write_text("input,x\nold,1\n")
    with pytest.raises(ValueError, match="has both inputs.csv and inputs.csv.gz: remove the one that is not current"):
        load_dataset_dir(tmp_path / "real")
