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


def test_every_method_has_a_bar_colour_of_its_own_and_the_legend_covers_no_bar(tmp_path, family_measurements,
                                                                               monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    m, _ = family_measurements()
    r = evaluate(m, max_size=1)              # every method: 13 bars per device, more than a 10-colour cycle
    assert len(r["methods"]) > 10
    saved, save = [], Figure.savefig

    def keep(fig, *args, **kwargs):          # matplotlib's savefig, each figure looked at as it is written
        out = save(fig, *args, **kwargs)
        ax = fig.axes[0]
        renderer = fig.canvas.get_renderer()
        saved.append(([tuple(c.patches[0].get_facecolor()) for c in ax.containers],
                      ax.get_legend().get_window_extent(renderer),
                      [p.get_window_extent(renderer) for c in ax.containers for p in c.patches]))
        return out
    monkeypatch.setattr(Figure, "savefig", keep)
    plot_evaluation(r, tmp_path)
    colours, legend, bars = saved[0]                                   # percent_of_optimum.png
    assert len(colours) == len(r["methods"]) == len(set(colours))     # before: random and few-shot 10% alike
    assert not any(legend.overlaps(b) for b in bars)                   # before: it hid the first device's bars


def test_the_bars_axis_reaches_below_a_method_under_half_the_optimum(tmp_path, monkeypatch):
    """The axis had started at 50%: a method below it (a random choice among many variants, a
    model far off) drew no bar at all."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    result = {"targets": {"gpu_a": {"random": 31.5, "cvdfs": 92.0}, "gpu_b": {"random": 64.0, "cvdfs": 97.0}},
              "cross_kind": {}, "methods": {"random": "random", "cvdfs": "CV-DFS"}, "holdout_by": "device",
              "variants": ["x", "y"], "analysis": {"best_variant_counts": {"gpu_a": {"x": 3}, "gpu_b": {"y": 2}}}}
    limits, save = [], Figure.savefig

    def keep(fig, *args, **kwargs):
        limits.append(fig.axes[0].get_ylim())
        return save(fig, *args, **kwargs)
    monkeypatch.setattr(Figure, "savefig", keep)
    plot_evaluation(result, tmp_path)
    low, high = limits[0]
    assert low <= 31.5 - 1 and low >= 0 and high == 100
    plot_evaluation({**result, "targets": {d: {"random": 80.0, "cvdfs": 95.0} for d in ("gpu_a", "gpu_b")}},
                    tmp_path)
    assert len(limits) == 4 and limits[2] == (50, 100)         # as before where every bar is above 50%
