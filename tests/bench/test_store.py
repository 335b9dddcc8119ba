"""``nitro bench store`` on a few rows: every target reports its figures, and reads back
exactly the rows its writers wrote (a redis-server binary is needed for two of them)."""
import shutil

import pytest

from nitro.bench.store import bench_store, format_store


@pytest.mark.slow
def test_bench_store_writes_and_reads_every_row_on_every_target():
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        pytest.skip("no redis-server and redis-cli on PATH: the server and cluster targets need them")
    result = bench_store(rows=600, writers=3, batch=50)
    assert set(result["targets"]) == {"embedded", "server", "cluster"}
    for figures in result["targets"].values():
        assert figures["read_rows"] == 600
        assert min(figures["write_1_rows_per_s"], figures["write_3_rows_per_s"],
                   figures["reference_row_per_call_rows_per_s"], figures["read_peak_mb"]) > 0
    assert set(result["goals_met"]) == {"write_rows_per_s", "read_seconds_per_million", "read_peak_mb"}
    assert "cluster" in format_store(result)
    with pytest.raises(ValueError, match="targets must be among"):
        bench_store(rows=10, targets=("sentinel",))
