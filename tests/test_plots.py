"""Figures of an evaluation: each is written as a PNG, the calibration figure with both
estimates (zero-shot and few-shot) where the evaluation has them."""
from nitro.evaluate import evaluate
from nitro.plots import plot_evaluation


def test_an_evaluation_plots_its_bars_best_variants_and_both_calibrations(tmp_path, family_measurements):
    m, _ = family_measurements(n_inputs=600)      # 300 training inputs: 2% is the 6 a few-shot estimate needs
    r = evaluate(m, methods=["majority", "cvdfs", "few_shot"], holdout_by="arch", max_size=1)
    assert r["calibration"] and r["few_shot_calibration"]
    paths = plot_evaluation(r, tmp_path / "figs")
    assert [p.rsplit("/", 1)[1] for p in paths] == ["percent_of_optimum.png", "best_variant_counts.png", "calibration.png"]
    for p in paths:
        with open(p, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    r.pop("calibration"), r.pop("few_shot_calibration")
    assert [p.rsplit("/", 1)[1] for p in plot_evaluation(r, tmp_path / "bare")] == [
        "percent_of_optimum.png", "best_variant_counts.png"]                  # nothing to calibrate: no figure
