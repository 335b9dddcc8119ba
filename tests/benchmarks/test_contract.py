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
