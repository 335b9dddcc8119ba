"""nitro bench variants' table: whole variant and family names, figures in their columns."""
from nitro.bench.variants import format_variants


def _family(best, counts):
    return {"tuned_percent_of_optimum": 97.5, "best_fixed_variant": best, "best_fixed_percent": 100.0,
            "speedup_over_baseline": {"median": 1.28, "share_at_least_as_fast": 0.75}, "distinct_best_variants": 2,
            "best_variant_counts": counts, "n_scored": 4}


def test_the_table_keeps_whole_names_and_lines_up():
    r = {"machine": "vm x86_64", "numpy": "NumPy 2", "families": {
        "histogram": _family("shared_atomic_dynamic", {"shared_atomic_dynamic": 4}),
        "histogram_cuda": _family("sort_even", {"sort_even": 4}),
        "bfs": _family("contract_expand_iterative", {"contract_expand_iterative": 4})}}
    table = format_variants(r).splitlines()[2:6]
    assert len({len(line) for line in table}) == 1, "\n".join(table)
    assert "shared_atomic_dynamic 100.0%" in table[1] and "contract_expand_iterative 100.0%" in table[3]
    assert table[2].startswith("histogram_cuda ")
