import numpy as np
import pytest

from nitro.profiling import cpu
from nitro.profiling.record import INTENSITIES, PROXIES


@pytest.mark.parametrize("instruction, expected", [
    (("addq", "$0x1,(%rcx,%rdx,8)", True), ("atomic", 0)),
    (("xchg", "%rax,(%rdx)", False), ("atomic", 0)),
    (("xchg", "%ax,%ax", False), ("other", 0)),
    (("vfmadd231ps", "%ymm1,%ymm2,%ymm0", False), ("fp32", 16)),
    (("vaddps", "%zmm1,%zmm2,%zmm0", False), ("fp32", 16)),
    (("mulsd", "%xmm1,%xmm0", False), ("fp64", 1)),
    (("addpd", "(%rax),%xmm0", False), ("fp64", 2)),
    (("vfnmadd213sd", "%xmm1,%xmm2,%xmm0", False), ("fp64", 2)),
    (("movss", "(%rax),%xmm0", False), ("other", 0)),
    (("jne", "24420", False), ("branch", 0)),
    (("add", "0x40(%rsi),%rdi", False), ("other", 0)),
])
def test_classify(instruction, expected):
    assert cpu.classify(*instruction) == expected


def test_unpicklable_calls_are_refused():
    if cpu.available():
        pytest.skip(f"needs callgrind: {cpu.available()}")
    with pytest.raises(TypeError, match="picklable"):
        cpu.profile_call(lambda x: x, (1,))


@pytest.mark.slow
def test_recorded_profiles_cover_variants_inputs_and_proxies(recorded_cpu_profiles):
    r = recorded_cpu_profiles
    assert r["counts"]["variant_profiles"] == 6 * 2 and r["counts"]["proxy_profiles"] == 5 * 6
    assert {i for _, i in r["variants"]} == set(r["ids"])
    assert set(r["proxies"]) == {(p, phi) for p in PROXIES for phi in INTENSITIES}
    for m in list(r["variants"].values()) + list(r["proxies"].values()):
        assert set(m) == set(cpu.METRICS) and m["inst_executed"] > 1000
        assert m["inst_unclassified"] == 0
        assert all(0 <= v <= 1 for k, v in m.items() if k not in ("inst_executed", "flop_count_sp", "flop_count_dp"))


# The metric of each proxy's kind: phi sets about phi * 20% of the slots (~phi * 16.5% of all
# instructions, the loop's own instructions being the rest).
KIND_METRIC = {"SP-GFLOP": "inst_fp_32", "DP-GFLOP": "inst_fp_64", "ATOMIC": "inst_atomic",
               "MEM-BW": "ll_read_miss", "SH-MEM-BW": "l1_hit_load"}


@pytest.mark.slow
@pytest.mark.parametrize("proxy", list(PROXIES))
def test_proxy_intensity_sets_its_share_of_instructions(recorded_cpu_profiles, proxy):
    shares = np.array([recorded_cpu_profiles["proxies"][(proxy, phi)][KIND_METRIC[proxy]] for phi in INTENSITIES])
    assert shares[0] < 0.06
    assert np.all(np.diff(shares) > 0.1)
    slope = np.polyfit(np.arange(6), shares, 1)[0]
    assert 0.12 < slope < 0.2
    for other, metric in KIND_METRIC.items():  # the other kinds stay flat
        if other != proxy and metric != "l1_hit_load":
            assert recorded_cpu_profiles["proxies"][(proxy, 5)][metric] < 0.02


@pytest.mark.slow
def test_histogram_variants_have_the_expected_mix(recorded_cpu_profiles):
    by_variant = {}
    for (v, _), m in recorded_cpu_profiles["variants"].items():
        by_variant.setdefault(v, []).append(m)
    for v, ms in by_variant.items():
        atomic = np.mean([m["inst_atomic"] for m in ms])
        if v.startswith("global_atomic"):
            assert atomic > 0.15  # one lock add per byte
        else:
            assert atomic < 0.02
        assert all(m["inst_fp_32"] == 0 and m["inst_fp_64"] == 0 for m in ms)
        assert all(m["inst_load"] > 0.1 for m in ms)


def test_profile_command_and_method_refuse_bad_requests(capsys):
    from nitro import autotuner
    from nitro.benchmarks import histogram
    from nitro.cli import main
    assert main(["profile", "nope"]) == 2
    assert "unknown benchmark family 'nope'" in capsys.readouterr().err
    assert main(["profile", "histogram", "--max-bytes", "10"]) == 2
    assert "at most 10 bytes" in capsys.readouterr().err
    with pytest.raises(ValueError, match="set_training_args"):
        autotuner("histogram", progress=False).profile([histogram.make_code_variant()])


def test_profile_command_without_valgrind_says_so_in_one_line(capsys, monkeypatch, tmp_path):
    """Without valgrind on the PATH the command names what is missing (nitro: error:, exit 2),
    not a RuntimeError traceback from the profiling subprocess."""
    from nitro.cli import main
    monkeypatch.setenv("PATH", str(tmp_path))          # an empty folder: no valgrind, no objdump
    assert main(["profile", "histogram"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nitro: error: nitro profile needs callgrind on this machine: valgrind is not installed")
    assert "Traceback" not in err


def test_read_costs_follows_callgrind_compression(tmp_path):
    out = tmp_path / "callgrind.out.1"
    out.write_text("\n".join([
        "version: 1", "positions: instr", "events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw",
        "ob=(1) /lib/other.so", "fn=(1) f", "0x10 5 5",
        "cob=(2) /mod/ext.so", "cfn=(2) g", "calls=1 0x20", "0x14 100 7",  # inclusive call cost: skipped
        "ob=(2)", "fn=(2)", "0x20 3 1 0 0 1", "+4 3", "* 2 0 2", "-4 1 1",
        "totals: 14"]) + "\n")
    costs = cpu.read_costs(out, ["/mod/ext.so"])
    assert costs == {("/mod/ext.so", 0x20): [4, 2, 0, 0, 1, 0, 0, 0, 0],
                     ("/mod/ext.so", 0x24): [5, 0, 2, 0, 0, 0, 0, 0, 0]}
