"""Nsight Compute profiles (``nitro.devices.ncu``): the command line, the CSV with its units, and
``profile`` end to end with a stand-in ``ncu`` that prints a CSV in ncu's format
(``data/ncu_proxy.csv``: written by hand in the layout ``ncu --csv --print-units base`` prints,
since no GPU was at hand to record one); on a GPU, the real ncu."""
import shutil
import stat
import sys
from pathlib import Path

import pytest

from nitro import cuda
from nitro.devices import ncu

CSV = Path(__file__).with_name("data") / "ncu_proxy.csv"
FLOPS = ["flop_count_sp", "l1_cache_global_hit_rate", "inst_issued", "dram_read_throughput"]


def test_command_asks_for_base_units_csv_and_the_kernel():
    cmd = ncu.command("/opt/ncu", ["b.sum", "a.sum"], "nitro.devices.gpu_proxies:run", ["SP-GFLOP", 1], None, "proxy")
    assert cmd[0] == "/opt/ncu" and "--csv" in cmd
    assert cmd[cmd.index("--print-units") + 1] == "base"
    assert cmd[cmd.index("--metrics") + 1] == "b.sum,a.sum"
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:proxy"
    assert cmd[-6:] == [sys.executable, "-c", ncu._CHILD, "nitro.devices.gpu_proxies:run", '["SP-GFLOP", 1]', "{}"]


@pytest.mark.parametrize("value, unit, base", [
    (1.5, "Gbyte/second", 1.5e9), (812.0, "Mbyte/second", 8.12e8), (2.0, "byte/second", 2.0),
    (3.0, "usecond", 3e-6), (1.98, "cycle/nsecond", 1.98e9), (87.5, "%", 87.5), (5.0, "Kinst", 5000.0),
    (64.0, "register/thread", 64.0), (None, "byte", None)])
def test_values_are_brought_to_base_units(value, unit, base):
    assert ncu.to_base(value, unit) == (None if base is None else pytest.approx(base))


def test_an_unknown_prefix_is_refused_not_mixed():
    with pytest.raises(ValueError, match="unknown prefix"):
        ncu.to_base(1.0, "Xbyte/second")


def test_csv_rows_are_read_with_their_units():
    kernels = ncu.parse_csv(CSV.read_text())
    assert [k["id"] for k in kernels] == ["0", "1"] and {k["name"] for k in kernels} == {"proxy"}
    assert kernels[0]["raw"]["dram__bytes_read.sum.per_second"] == 812_345_678
    assert kernels[1]["raw"]["l1tex__t_sector_hit_rate.pct"] is None            # "n/a"
    # the same rate scaled per value, as ncu prints it without --print-units base
    auto = CSV.read_text().replace('"byte/second","1,623,456,789,012"', '"Tbyte/second","1.623456789012"')
    assert ncu.parse_csv(auto)[1]["raw"]["dram__bytes_read.sum.per_second"] == pytest.approx(1_623_456_789_012)


def test_counts_are_normalised_by_issued_instructions():
    kernels = ncu.parse_csv(CSV.read_text())
    values, missing = ncu.combine(kernels[0]["raw"], FLOPS + ["dram_read_transactions"])
    assert values["flop_count_sp"] == pytest.approx((2 * 4_194_304 + 1_048_576) / 1_048_576)
    assert values["l1_cache_global_hit_rate"] == 87.5 and values["inst_issued"] == 1_048_576
    assert values["dram_read_throughput"] == 812_345_678
    assert "dram__sectors_read.sum" in missing["dram_read_transactions"]
    values, missing = ncu.combine(kernels[1]["raw"], ["l1_cache_global_hit_rate"])
    assert values == {} and "l1tex__t_sector_hit_rate.pct" in missing["l1_cache_global_hit_rate"]


def test_every_paper_metric_maps_to_ncu_metrics():
    needed = ncu.ncu_metrics(ncu.METRICS)
    assert ncu.NORMALISER in needed and all("__" in m for m in needed)
    with pytest.raises(ValueError, match="unknown profiling metric"):
        ncu.ncu_metrics(["flops"])


def _stand_in_ncu(tmp_path, body: str) -> Path:
    """An executable ``ncu`` that records its arguments and prints what ``body`` prints."""
    exe = tmp_path / "ncu"
    exe.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{tmp_path}/argv"\n{body}\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_profile_runs_ncu_in_base_units_and_reads_its_kernels(tmp_path):
    exe = _stand_in_ncu(tmp_path, f'cat "{CSV}"')
    result = ncu.profile("nitro.devices.gpu_proxies:run", ["SP-GFLOP", 1], metrics=FLOPS, ncu=str(exe),
                         kernel_regex="proxy")
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[argv.index("--print-units") + 1] == "base"
    assert set(argv[argv.index("--metrics") + 1].split(",")) == set(ncu.ncu_metrics(FLOPS))
    assert [k["name"] for k in result["kernels"]] == ["proxy", "proxy"]
    assert result["kernels"][1]["metrics"]["dram_read_throughput"] == 1_623_456_789_012
    assert result["kernels"][1]["inst_issued"] == 2_097_152
    assert "l1_cache_global_hit_rate" in result["missing"]


def test_profile_says_when_ncu_profiled_no_kernel(tmp_path):
    exe = _stand_in_ncu(tmp_path, 'echo "==WARNING== No kernels were profiled."; exit 0')
    result = ncu.profile("nitro.devices.gpu_proxies:run", ["SP-GFLOP", 1], ncu=str(exe))
    assert result["kernels"] == [] and "profiled no kernel" in result["missing"]
    assert "No kernels were profiled" in result["missing"]


def test_profile_without_ncu_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("NITRO_NCU", raising=False)
    result = ncu.profile("nitro.devices.gpu_proxies:run", ["SP-GFLOP", 1])
    assert result["kernels"] == [] and "ncu" in result["missing"]
    with pytest.raises(ValueError, match="module:function"):
        ncu.profile("not_a_target")


@pytest.mark.gpu
@pytest.mark.skipif(cuda.unavailable() is not None, reason=f"no CUDA GPU here: {cuda.unavailable()}")
@pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute (ncu) is not on PATH")
def test_ncu_profile_of_proxies_tracks_intensity():
    """One ``proxy`` row per run, with issued instructions, and between 2 and 4.5 times the FP32
    FLOPs at phi 4 as at phi 1 (4 x the FMAs, plus the few FP32 operations every element does).
    Only a missing permission to read the counters skips; any other failure fails."""
    flops = []
    for phi in (1, 4):
        result = ncu.profile("nitro.devices.gpu_proxies:run", ["SP-GFLOP", phi, 1 << 20],
                             metrics=["inst_fp_32", "flop_count_sp", "inst_executed"], kernel_regex="proxy")
        if isinstance(result["missing"], str) and "ERR_NVGPUCTRPERM" in result["missing"]:
            pytest.skip(result["missing"])
        assert not isinstance(result["missing"], str), result["missing"]
        [kernel] = result["kernels"]
        assert kernel["name"].startswith("proxy") and kernel["inst_issued"] > 0
        assert set(kernel["metrics"]) == {"inst_fp_32", "flop_count_sp", "inst_executed"}
        flops.append(kernel["metrics"]["flop_count_sp"] * kernel["inst_issued"])
    assert 2.0 < flops[1] / flops[0] < 4.5
