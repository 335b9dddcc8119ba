"""nitro bench training's table: the figures stand in their columns whatever the labels' length."""
from nitro.bench.training import format_training


def test_the_table_columns_line_up_with_long_labels():
    side = {"variant_calls": 496, "percent_of_optimum": 78.4}
    r = {"family": "histogram", "n_train": 16, "n_test": 8, "repeats": 1, "machine": "vm x86_64", "budget": 0.75,
         "runs": [{"seed": 0, "exhaustive": {"variant_calls": 1730, "percent_of_optimum": 83.1}, "reduced": side}],
         "exhaustive": {"variant_calls": 1730, "percent_of_optimum": 83.1}, "reduced": side,
         "calls_ratio": 0.287, "seconds_ratio": 0.811, "quality_ratio": 0.9434, "worst_quality_ratio": 0.9434}
    lines = format_training(r).splitlines()
    table = lines[1:-1]
    assert len(table) == 5 and len({len(line) for line in table}) == 1, "\n".join(table)
    assert table[2].rstrip().endswith("496         78.4%") and "early stopping + active (budget 0.75)" in table[2]
