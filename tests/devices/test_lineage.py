"""A described device's kind, vendor and architecture family (metadata, never features)."""
from pathlib import Path

import pandas as pd
import pytest

from nitro import devices
from nitro.devices.cpu import _cpuinfo
from nitro.devices.lineage import cpu_arch, cpu_metadata, gpu_arch, gpu_metadata

SHARED = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "spmv_ginkgo" / "devices.csv"

# what /proc/cpuinfo says on each kind of machine (fields as the kernel writes them)
CPUS = {
    "zen2": {"vendor_id": "AuthenticAMD", "cpu family": "23", "model": "49", "model name": "AMD EPYC 7742 64-Core Processor"},
    "zen3": {"vendor_id": "AuthenticAMD", "cpu family": "25", "model": "1", "model name": "AMD EPYC"},
    "zen4": {"vendor_id": "AuthenticAMD", "cpu family": "25", "model": "17", "model name": "AMD EPYC"},
    "zen5": {"vendor_id": "AuthenticAMD", "cpu family": "26", "model": "2", "model name": "AMD EPYC"},
    "skylake": {"vendor_id": "GenuineIntel", "cpu family": "6", "model": "85", "stepping": "4"},
    "cascade_lake": {"vendor_id": "GenuineIntel", "cpu family": "6", "model": "85", "stepping": "7"},
    "sapphire_rapids": {"vendor_id": "GenuineIntel", "cpu family": "6", "model": "143", "stepping": "8"},
    "broadwell": {"vendor_id": "GenuineIntel", "cpu family": "6", "model": "79", "stepping": "1"},
    "neoverse_v2": {"CPU implementer": "0x41", "CPU architecture": "8", "CPU part": "0xd4f"},
}


@pytest.mark.parametrize("arch", sorted(CPUS))
def test_a_cpus_family_is_read_from_its_vendor_family_and_model_numbers(arch):
    assert cpu_arch(CPUS[arch]) == arch
    assert cpu_metadata(CPUS[arch])["kind"] == "cpu"


def test_a_cpu_or_gpu_the_tables_do_not_know_gets_no_family():
    """Each such device is a family of its own: no guessed name to make two of them siblings."""
    unknown = {"vendor_id": "GenuineIntel", "cpu family": "6", "model": "999"}
    assert cpu_metadata(unknown) == {"kind": "cpu", "vendor": "intel"}
    assert cpu_metadata({"model name": "Some RISC-V core"}) == {"kind": "cpu"}
    assert cpu_metadata({"vendor_id": "AuthenticAMD", "cpu family": "x"}) == {"kind": "cpu", "vendor": "amd"}
    assert gpu_arch(4.0) is None and gpu_arch(None) is None
    assert gpu_metadata({"compute_capability": {"value": None, "missing": "no driver"}}) == \
        {"kind": "gpu", "vendor": "nvidia"}


def test_gpu_families_follow_the_compute_capability():
    assert [gpu_arch(cc) for cc in (3.5, 3.7, 6.0, 6.1, 7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0, 12.0)] == [
        "kepler", "kepler", "pascal", "pascal", "volta", "turing", "ampere", "ampere", "ada", "hopper",
        "blackwell", "blackwell"]
    assert gpu_metadata({"compute_capability": {"value": 9.0}}) == {"kind": "gpu", "vendor": "nvidia", "arch": "hopper"}


def test_the_family_names_agree_with_the_shared_datas_arch_column():
    """Devices nitro describes and devices imported from the SpMV data share family names, so
    a target recorded by nitro is a new family exactly where that data says so. Compute
    capabilities from NVIDIA's tables; the Xeon Gold 6230 is family 6, model 85, stepping 7."""
    if not SHARED.exists():
        pytest.skip(f"the shared SpMV data set is not at {SHARED}")
    arch = pd.read_csv(SHARED, index_col="device")["arch"]
    described = {"tesla_k20xm": gpu_arch(3.5), "tesla_k40m": gpu_arch(3.5), "tesla_p100": gpu_arch(6.0),
                 "titan_v": gpu_arch(7.0), "tesla_v100_sxm2": gpu_arch(7.0), "xeon_gold_6230": cpu_arch(CPUS["cascade_lake"])}
    assert described == {d: arch[d] for d in described}


def test_this_machines_cpu_is_described_with_its_vendor_and_the_family_its_numbers_give():
    meta = devices.local_metadata(devices.current_device_id())
    assert meta["kind"] == "cpu"
    assert meta.get("vendor") == cpu_metadata(_cpuinfo()).get("vendor")
    assert meta.get("arch") == cpu_arch(_cpuinfo())
