import importlib.util

import joblib
import numpy as np
import pytest

from nitro.parallel import parallel_backend


def _backend_in_use():
    return joblib.parallel.get_active_backend()[0].__class__.__name__


@pytest.mark.parametrize("name, cls", [("threading", "ThreadingBackend"), ("loky", "LokyBackend")])
def test_backend_applies_inside_the_context_only(name, cls):
    with parallel_backend(name, n_jobs=2):
        assert _backend_in_use() == cls
        out = joblib.Parallel()(joblib.delayed(np.square)(i) for i in range(4))
    assert out == [0, 1, 4, 9]


def test_unknown_or_missing_backends_are_named():
    with pytest.raises(ValueError, match="unknown parallel backend 'spark'"):
        parallel_backend("spark")
    if importlib.util.find_spec("ray") is None:
        with pytest.raises(ValueError, match="needs the ray package"):
            parallel_backend("ray")
