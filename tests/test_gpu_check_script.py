"""``benchmarks/gpu_check.sh``, the script a session lent a GPU runs first: with no time left
every stage is skipped and says so, and what ``datasets/`` already holds is not recorded again
(its GPU stages need a GPU and are checked where one is lent)."""
import os
import subprocess
import sys
from pathlib import Path

from nitro.devices import cpu_device_id

ROOT = Path(__file__).resolve().parents[1]


def test_with_no_time_left_every_stage_says_it_is_skipped(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path), "DEADLINE": "10"}
    run = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_check.sh")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "no nvidia-smi here" in run.stdout or "GPU 0" in run.stdout
    for stage in ("selftest", "devices"):
        assert f"=== SKIP {stage}" in run.stderr
    assert "=== SKIP gpu-tests" in (tmp_path / "gpu_tests.log").read_text()   # the stage's output goes there
    cpu = cpu_device_id()
    if (ROOT / "datasets" / cpu).is_dir():
        assert f"datasets/{cpu} exists: not recorded again" in run.stdout
    else:
        assert "=== SKIP record-cpu" in run.stderr
    assert not (tmp_path / "devices.json").read_text()      # a skipped stage writes nothing there
