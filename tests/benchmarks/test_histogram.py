import math

import numpy as np
import pytest

from nitro.benchmarks import histogram


@pytest.mark.parametrize("name", histogram.VARIANT_NAMES)
@pytest.mark.parametrize("n", [0, 1, 2, 255, 16383, 16384, 16385, 100_003, 3_000_000])
def test_variants_match_bincount(name, n):
    rng = np.random.default_rng(n)
    for data in (rng.integers(0, 256, n, dtype=np.uint8), np.full(n, 255, np.uint8)):
        out = histogram.VARIANTS[name](data)
        assert out.dtype == np.uint64 and out.shape == (256,)
        assert np.array_equal(out, histogram.reference(data))


def test_non_contiguous_2d_input_and_bad_dtype():
    img = np.arange(60000, dtype=np.uint8).reshape(200, 300)[:, ::2]
    for fn in histogram.VARIANTS.values():
        assert np.array_equal(fn(img), histogram.reference(img))
    with pytest.raises(TypeError, match="dtype uint8"):
        histogram.VARIANTS["sort_even"](np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="numpy array"):
        histogram.VARIANTS["sort_even"]([1, 2])


def test_inputs_deterministic_disjoint_and_in_range():
    (a, ia), (b, ib) = histogram.train_test_inputs(14, 14, seed=3)
    (a2, ia2), _ = histogram.train_test_inputs(14, 14, seed=3)
    assert ia == ia2 and all(np.array_equal(x, y) for x, y in zip(a, a2))
    assert not set(ia) & set(ib)
    assert {i.split("-")[2] for i in ia} == set(histogram.KINDS)
    assert all(histogram.MIN_BYTES // 2 <= x.size <= histogram.MAX_BYTES for x in a + b)


def test_features():
    img = np.full((10, 10), 7, np.uint8)
    assert histogram.n(img) == 100 and histogram.n_per_bin(img) == 100 / 256
    assert histogram.subsample_std(img) == 0.0 and histogram.subsample_std(np.zeros(0, np.uint8)) == 0.0


def _strided_std(flat, samples):
    """The C++ feature's formula on the same strided samples: exact integer sums, then doubles."""
    step = max(1, flat.size // samples if samples else flat.size)
    v = flat[::step].astype(np.int64)
    total, total_sq, c = float(v.sum()), float((v * v).sum()), float(v.size)
    return math.sqrt(max((total_sq * c - total * total) / (c * c), 0.0))


@pytest.mark.parametrize("n", [1, 3, 4, 5, 7, 1023, 1024, 1027, 4099, 250_001, 3_000_017])
@pytest.mark.parametrize("samples", [0, 1, 3, 1024, 5000])
def test_subsample_std_is_the_exact_formula_on_the_strided_samples(n, samples):
    """Every remainder of the four-sample loop: bit-identical to the formula in plain doubles."""
    flat = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    assert histogram.subsample_std(flat, samples) == _strided_std(flat, samples)


def test_subsample_std_of_what_the_binding_refuses_is_numpy_s():
    img = np.random.default_rng(0).integers(0, 256, (300, 400), dtype=np.uint8)
    view = img[:, ::2]                                  # not contiguous: NumPy's std of the samples
    flat = view.reshape(-1)
    assert histogram.subsample_std(view) == float(flat[:: flat.size // 1024].std())
    assert histogram.subsample_std(img.astype(np.int16)) == float(img.reshape(-1)[::117].std())
    assert histogram.subsample_std([[1, 2], [3, 4]]) == float(np.std([1, 2, 3, 4]))
