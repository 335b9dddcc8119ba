"""``nitro bench scale`` on tiny synthetic tables: every step runs and reports its figures."""
import pytest

from nitro.bench.scale import bench_scale, format_scale, growth_exponent


def test_growth_exponent_of_linear_and_quadratic_costs():
    assert growth_exponent([10000, 30000, 100000], [1.0, 3.0, 10.0]) == pytest.approx(1.0)
    assert growth_exponent([10000, 100000], [1.0, 100.0]) == pytest.approx(2.0)
    assert growth_exponent([1000, 3000], [1.0, 3.0]) is None              # nothing from 10k on


def test_every_step_runs_in_a_fresh_process_and_reports(tmp_path):
    r = bench_scale(sizes=[60], steps=["tune_fit", "tune_from_source"], workdir=tmp_path, progress=False)
    fit, tfs = r["steps"]["tune_fit"][60], r["steps"]["tune_from_source"][60]
    assert r["synthetic"] and fit["seconds"] > 0 and fit["peak_gb"] > 0 and fit["fit_inputs"] == 60
    assert tfs["model_kind"] == "kernel" and tfs["centres"] == 60 and tfs["import_seconds"] > 0
    assert all(v["dispatch_us"] > 0 and v["model_mb"] > 0 for v in (fit, tfs))
    assert "SYNTHETIC" in format_scale(r) and set(r["checks"]) == {"model_mb", "dispatch_us"}


def test_too_few_devices_for_the_cross_device_steps_are_refused_before_any_table_is_made(tmp_path, capsys):
    from nitro.cli import main
    with pytest.raises(ValueError, match=r"steps evaluate learn a target .* need at least 4 devices \(a target and 3 sources\), got devices=2"):
        bench_scale(sizes=[60], devices=2, steps=["evaluate"], workdir=tmp_path, progress=False)
    assert not list(tmp_path.iterdir())       # before: the table made, then a child's traceback from split
    assert main(["bench", "scale", "--sizes", "60", "--devices", "3", "--steps", "tune_fit,tune_from_source",
                 "--workdir", str(tmp_path)]) == 2
    assert "nitro: error: steps tune_from_source learn a target from its sources" in capsys.readouterr().err
    r = bench_scale(sizes=[60], devices=2, steps=["tune_fit"], workdir=tmp_path, progress=False)
    assert r["steps"]["tune_fit"][60]["fit_inputs"] == 60          # the on-device step needs one device


@pytest.mark.parametrize("given, shown", [("1.5", "'1.5' is not one"), ("60,1e4", "'1e4' is not one"),
                                          ("0", "'0' is not one")])
def test_sizes_that_are_not_whole_numbers_are_refused_as_given(capsys, given, shown):
    """``--sizes 1.5`` was read as 1 and refused as "got 1", a size the user never gave."""
    from nitro.cli import main
    with pytest.raises(SystemExit):
        main(["bench", "scale", "--sizes", given])
    assert f"argument --sizes: comma-separated whole numbers of at least 1, got {given!r} ({shown})" \
        in capsys.readouterr().err


@pytest.mark.parametrize("sizes, shown", [([1.5], "1.5"), ([60, 5], "5"), ([True], "True")])
def test_bench_scale_refuses_sizes_it_cannot_make_a_table_of(tmp_path, sizes, shown):
    with pytest.raises(ValueError, match=f"sizes are whole numbers of inputs, at least 20 each, got {shown}$"):
        bench_scale(sizes=sizes, steps=["tune_fit"], workdir=tmp_path, progress=False)
    assert not list(tmp_path.iterdir())
