"""``nitro selftest --gpu``: without a GPU it skips, saying why, and exits 0; on a GPU every
path passes (the verdict a user's first run gives)."""
import contextlib
import io
import json

import pytest

from nitro import cuda, selftest
from nitro.cli import main

REASON = cuda.variants_unavailable()


def _run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.mark.skipif(REASON is None, reason="a CUDA GPU is usable here")
def test_without_a_gpu_the_selftest_skips_saying_why():
    code, text = _run(["selftest", "--gpu"])
    assert code == 0 and text.startswith("GPU self-test skipped: no usable NVIDIA GPU here: ")
    assert REASON in text
    code, text = _run(["selftest", "--gpu", "--json"])
    assert code == 0 and json.loads(text) == {"skipped": f"no usable NVIDIA GPU here: {REASON}", "passed": True}


def test_selftest_without_a_path_to_check_is_an_error(capsys):
    assert main(["selftest"]) == 2
    assert "--gpu" in capsys.readouterr().err


def test_report_names_every_path_with_its_status():
    result = {"checks": [{"name": "spmv_cuda variants", "status": "pass", "detail": "24 products"},
                         {"name": "ncu profile", "status": "skip", "detail": "no ncu"},
                         {"name": "tune spmv_cuda", "status": "FAIL", "detail": "AssertionError: 2 forks"}],
             "passed": False}
    lines = selftest.format_gpu(result).splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["pass", "skip", "FAIL"]
    assert "2 forks" in lines[2] and lines[-1] == "GPU self-test: 1 FAILED"
    assert set(selftest.CHECKS) >= {"histogram_cuda variants", "histogram_cuda in worker threads", "spmv_cuda variants",
                                    "tune histogram_cuda", "tune spmv_cuda", "atomic microbenchmarks", "P-DFS proxies",
                                    "ncu profile", "device record"}


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
def test_every_gpu_path_passes():
    result = selftest.run_gpu()
    assert result["passed"], selftest.format_gpu(result)
    assert all(r["status"] == "pass" for r in result["checks"] if r["name"] != "ncu profile"), result
