import pandas as pd
import pytest

from nitro import devices
from nitro.devices import datasheet
from nitro.devices.cpu import _model_name


def raw():
    return pd.read_csv(datasheet.PATH, dtype=str, keep_default_na=False, na_values=[""])


def test_table_is_valid_and_large_enough():
    table = datasheet.load()
    assert len(table) >= 30
    assert table["id"].is_unique
    assert (table["source"].str.len() > 10).all()
    assert set(table["kind"]) == {"cpu", "gpu"}
    for col in datasheet.UNITS:
        assert table[col].dtype == float
    both = table.dropna(subset=["peak_gflops_sp", "peak_gflops_dp"])
    assert (both["peak_gflops_dp"] <= both["peak_gflops_sp"]).all()
    assert table["peak_gbps"].notna().all()


def test_the_papers_six_gpus_carry_table_1():
    table = datasheet.load().set_index("id")
    paper = {"geforce_gtx_480": (177.4, 1345, 168), "tesla_c2075": (144.0, 1030, 515),
             "geforce_gtx_770": (224.0, 3213, 134), "tesla_k20c": (208.0, 3520, 1170),
             "geforce_gtx_750_ti": (86.4, 1389, 43), "geforce_gtx_980": (224.0, 4612, 156)}
    for device, figures in paper.items():
        assert tuple(table.loc[device, ["peak_gbps", "peak_gflops_sp", "peak_gflops_dp"]]) == figures
        assert "Table 1" in table.loc[device, "source"]


@pytest.mark.parametrize("change, message", [
    (lambda t: t.assign(source=t["source"].where(t.index != 3, "")), "without a source"),
    (lambda t: t.assign(id=t["id"].where(t.index != 4, t["id"][0])), "unique"),
    (lambda t: t.assign(cores=t["cores"].where(t.index != 5, "many")), "not numeric"),
    (lambda t: t.assign(tdp_w=t["tdp_w"].where(t.index != 5, "-1")), "non-positive"),
    (lambda t: t.assign(kind=t["kind"].where(t.index != 6, "fpga")), "kind"),
    (lambda t: t.drop(columns=["tdp_w"]), "columns"),
])
def test_validation_names_the_problem(change, message):
    with pytest.raises(ValueError, match=message):
        datasheet.validate(change(raw()))


@pytest.mark.parametrize("reported, expected", [
    ("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz", "intel_xeon_platinum_8380"),
    ("AMD EPYC 7763 64-Core Processor", "amd_epyc_7763"),
    ("cpu_amd_epyc_9654_96_core_processor_192t", "amd_epyc_9654"),
    ("Intel(R) Xeon(R) Platinum 8480+", "intel_xeon_platinum_8480_plus"),
    ("NVIDIA H100 80GB HBM3", "h100_sxm5_80gb"),
    ("NVIDIA H100 PCIe", "h100_pcie_80gb"),
    ("Tesla V100-SXM2-16GB", "tesla_v100_sxm2"),
    ("NVIDIA A100-SXM4-80GB", "a100_sxm4_80gb"),
    ("instinct_mi100", "instinct_mi100"),
    ("xeon_gold_6230", "intel_xeon_gold_6230"),          # a device id without the vendor word
    ("EPYC 7742", "amd_epyc_7742"),
    ("AMD EPYC", None),
    ("EPYC", None),                                       # one word left once the vendor's is dropped
    ("Intel(R) Xeon(R) Platinum 8380H CPU @ 2.90GHz", None),
])
def test_lookup_by_reported_name_or_id(reported, expected):
    row = datasheet.lookup(reported)
    assert (row and row["id"]) == expected


def test_fill_adds_only_what_the_record_lacks():
    record = {"cores": {"value": 2.0, "unit": "cores", "source": "query"},
              "peak_gbps": {"value": None, "unit": "GB/s", "source": "microbench", "missing": "unstable"}}
    out = datasheet.fill(record, "AMD EPYC 7763 64-Core Processor")
    assert out["cores"] == record["cores"]
    assert out["peak_gbps"]["value"] == 204.8 and out["peak_gbps"]["source"] == "datasheet"
    assert out["tdp_w"]["value"] == 280 and out["clock_mhz"]["value"] == 3500
    assert "shared_mem_per_sm_kb" not in out  # no figure for this CPU
    assert record["peak_gbps"]["value"] is None  # the input record is not modified


def test_unknown_model_fills_nothing_and_says_so():
    out = datasheet.fill({}, "Some Future CPU 9999")
    assert out and all(r["value"] is None and "not in the datasheet" in r["missing"] for r in out.values())
    assert devices.feature_values(out) == {}


def test_describe_marks_datasheet_features():
    record = devices.describe(measure=False)
    marked = {k: r for k, r in record.items() if r["source"] == "datasheet"}
    assert "peak_gbps" in marked
    known = datasheet.lookup(_model_name()) is not None
    assert (marked["peak_gbps"]["value"] is not None) == known
