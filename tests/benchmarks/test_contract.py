"""Every benchmark family, CPU or GPU, offers the names that the tuner, ``nitro bench
variants`` and the examples rely on (see ``nitro/benchmarks/__init__.py``)."""
import inspect

import pytest

from nitro import CodeVariant
from nitro.benchmarks import FAMILIES, GPU_FAMILIES, load

CONTRACT = ["VARIANTS", "FEATURES", "reference", "baseline", "make_code_variant", "train_test_inputs"]


@pytest.mark.parametrize("family", FAMILIES + GPU_FAMILIES)
def test_family_offers_the_contract(family):
    module = load(family)
    missing = [name for name in CONTRACT if not hasattr(module, name)]
    assert not missing, f"{family} lacks {missing}"
    assert list(inspect.signature(module.train_test_inputs).parameters)[:3] == ["n_train", "n_test", "seed"]
    cv = module.make_code_variant()      # builds without a GPU too
    assert isinstance(cv, CodeVariant) and cv.variant_names == list(module.VARIANTS)
    assert cv.feature_names == list(module.FEATURES)


@pytest.mark.parametrize("family", GPU_FAMILIES)
def test_gpu_family_says_why_it_cannot_run(family):
    reason = load(family).unavailable()
    assert reason is None or (isinstance(reason, str) and reason)


def test_unknown_family_is_named():
    with pytest.raises(ValueError, match="unknown benchmark family 'nope'"):
        load("nope")


def test_a_module_of_ones_own_is_loaded_and_checked(tmp_path, monkeypatch):
    """A user's family loads by file or import name; one lacking the contract's names, a file
    that does not exist and a module that cannot be imported are refused naming the problem."""
    (tmp_path / "mine_ok.py").write_text("def make_code_variant(): pass\ndef train_test_inputs(): pass\n")
    (tmp_path / "mine_half.py").write_text("def make_code_variant(): pass\n")
    assert load(str(tmp_path / "mine_ok.py")).__name__ == "mine_ok"
    assert load(str(tmp_path / "mine_ok.py")) is load(str(tmp_path / "mine_ok.py"))
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "fam.py").write_text((tmp_path / "mine_ok.py").read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load("mypkg.fam").__name__ == "mypkg.fam"
    with pytest.raises(ValueError, match="'.*mine_half.py' is not a family module: it has no train_test_inputs"):
        load(str(tmp_path / "mine_half.py"))
    with pytest.raises(ValueError, match="does not exist"):
        load(str(tmp_path / "absent.py"))
    with pytest.raises(ValueError, match="'nosuchpkg.family' cannot be imported"):
        load("nosuchpkg.family")
    with pytest.raises(ValueError, match="no baseline"):
        load(str(tmp_path / "mine_ok.py"), needs=("baseline",))
