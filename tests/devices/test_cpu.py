"""CPU description (``nitro.devices.cpu``): stable ids."""
from nitro.devices.cpu import cpu_id_from as device_id


def test_cpu_ids_tell_generations_behind_one_generic_name_apart():
    """A KVM guest sees Zen 3 and Zen 4 alike as "AMD EPYC": family and model join such an id,
    so rows of one generation are never read back as the other's."""
    zen3 = {"model name": "AMD EPYC", "cpu family": "25", "model": "1"}
    zen4 = {"model name": "AMD EPYC", "cpu family": "25", "model": "17"}
    assert device_id(zen3, 2) == "cpu_amd_epyc_family25_model1_2t" != device_id(zen4, 2)
    named = {"model name": "AMD EPYC 7763 64-Core Processor", "cpu family": "25", "model": "1"}
    assert device_id(named, 128) == "cpu_amd_epyc_7763_64_core_processor_128t"      # a model number says it all
    assert device_id({"model name": "QEMU Virtual CPU version 2.5+", "cpu family": "6", "model": "6"}, 4) == \
        "cpu_qemu_virtual_cpu_version_2_5_family6_model6_4t"
    assert device_id({"model name": "AMD EPYC"}, 2) == "cpu_amd_epyc_2t"      # nothing more to tell
    clocked = {"model name": "Intel(R) Xeon(R) CPU @ 2.20GHz", "cpu family": "6"}     # a clock is no model number
    assert device_id({**clocked, "model": "79"}, 2) == "cpu_intel_r_xeon_r_cpu_2_20ghz_family6_model79_2t"
    assert device_id({**clocked, "model": "85"}, 2) != device_id({**clocked, "model": "79"}, 2)


def test_cpuinfo_keeps_each_keys_first_value_and_a_missing_name_is_the_machine():
    """/proc/cpuinfo lists every CPU: the first's fields count. No model name (Arm) names the
    machine (uname -m, which an exported C++ header reads too), not ``uname -p``."""
    import platform

    from nitro.devices.cpu import cpuinfo_fields
    info = cpuinfo_fields("processor\t: 0\nmodel name\t: A 1\nflags : x: y\n\nprocessor\t: 1\nmodel name\t: B 2\n")
    assert info == {"processor": "0", "model name": "A 1", "flags": "x: y"}
    arm = cpuinfo_fields("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n")
    assert device_id(arm, 4) == device_id({"model name": platform.machine() or "unknown"}, 4)
