import math

import numpy as np
import pytest

from nitro import TimingPolicy, autotuner, devices
from nitro.benchmarks import load, transpose
from nitro.benchmarks.transpose import TransposeInput
from nitro.measurement import measure_variants
from nitro.model import SelectorModel

FAST = TimingPolicy(min_repeats=1, max_repeats=2, target_seconds=0.0)
SHAPES = [(0, 0), (0, 5), (5, 0), (1, 1), (1, 17), (17, 1),                    # empty, vectors
          (2, 2), (8, 8), (64, 64),                                               # M = N
          (3, 5), (7, 11), (97, 89), (31, 1009), (3, 20011),                      # coprime, prime
          (4, 6), (12, 18), (60, 84), (128, 96), (2, 1000), (1000, 3), (6, 4096),  # gcd > 1
          (5000, 30), (20000, 4), (180, 250), (250, 180)]                          # parallel paths


@pytest.mark.parametrize("layout", ["C", "F"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_variants_match_transpose(shape, layout):
    x = np.asarray(np.random.default_rng(sum(shape)).standard_normal(shape), order=layout)
    problem = TransposeInput(x)
    before = x.copy()
    for name, fn in transpose.VARIANTS.items():
        for _ in range(2):                                   # repetitions see the same input
            out = fn(problem)
            assert out.shape == shape[::-1] and np.array_equal(out, x.T), name
        assert np.array_equal(x, before), f"{name} modified the matrix"
        assert np.array_equal(fn(x), x.T), name               # a bare ndarray is wrapped


def test_special_values_and_duplicates():
    x = np.array([[0.0, -0.0, np.inf], [-np.inf, np.nan, 1.0], [1.0, 1.0, 1.0], [2.0, 2.0, -0.0]])
    for fn in transpose.VARIANTS.values():
        out = fn(x)
        assert np.array_equal(out, x.T, equal_nan=True)
        assert np.array_equal(np.signbit(out), np.signbit(x.T))          # -0.0 moves bit-exactly


def test_measurement_checks_every_variant_against_the_reference():
    problem = transpose.make_inputs(1, seed=0, max_elements=50_000)[0][0]
    times, failed = measure_variants(transpose.VARIANTS, (problem,), reference=transpose.reference(problem),
                                     policy=FAST)
    assert not failed and all(t > 0 for t in times.values())


def test_bad_inputs_are_named():
    with pytest.raises(TypeError, match="float64"):
        TransposeInput(np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match="numpy array"):
        transpose.VARIANTS["c2r"]([[1.0]])
    with pytest.raises(ValueError, match="2-D"):
        TransposeInput(np.zeros(4))
    with pytest.raises(ValueError, match="m \\* n"):
        transpose._cpp.c2r(np.zeros(5), 2, 3)
    strided = np.arange(40.0).reshape(5, 8)[:, ::2]                    # copied to a contiguous matrix
    assert np.array_equal(transpose.VARIANTS["r2c"](strided), strided.T)
    with pytest.raises(ValueError, match="m \\* n"):                  # the product overflows int64
        transpose._cpp.c2r(np.zeros(0), 2**32, 2**32)
    big_endian = np.arange(12.0).reshape(3, 4).astype(">f8")
    for fn in transpose.VARIANTS.values():
        assert np.array_equal(fn(big_endian), big_endian.T)


def test_features():
    assert [f(np.zeros((4, 6))) for f in transpose.FEATURES.values()] == [4, 6, 1, 0]
    assert [f(TransposeInput(np.zeros((5, 7), order="F"))) for f in transpose.FEATURES.values()] == [5, 7, 0, 1]


def test_inputs_deterministic_disjoint_and_in_range():
    (a, ia), (b, ib) = transpose.train_test_inputs(8, 8, seed=3, max_elements=100_000)
    (a2, ia2), _ = transpose.train_test_inputs(8, 8, seed=3, max_elements=100_000)
    assert ia == ia2 and all(np.array_equal(x.matrix, y.matrix) for x, y in zip(a, a2))
    assert not set(ia) & set(ib)
    assert {i.split("-")[2] for i in ia} == set(transpose.KINDS)
    assert {x.row_major for x in a} == {True, False}
    assert all(x.matrix.size <= 100_000 for x in a + b)
    assert all(min(x.shape) <= transpose.SKINNY_MAX for x, i in zip(a, ia) if "balanced" not in i)
    assert any(math.gcd(*x.shape) == 1 for x in a) and any(math.gcd(*x.shape) > 1 for x in a)
    assert a[0].input_id == a2[0].input_id != a[1].input_id
    with pytest.raises(ValueError, match="unknown shape kind"):
        transpose.make_shape("square", 10, np.random.default_rng(0))


def test_family_contract():
    assert load("transpose") is transpose
    x = np.arange(6.0).reshape(2, 3)
    assert np.array_equal(transpose.baseline(x), x.T) and transpose.baseline(x).flags.owndata


def test_tune_and_dispatch(store):
    (train, ids), (test, _) = transpose.train_test_inputs(6, 3, seed=7, max_elements=30_000)
    cv = transpose.make_code_variant()
    cv.record, cv.device_id = True, "test_cpu"
    store.put_device("test_cpu", devices.describe(measure=False))     # no microbenchmarks in a unit test
    tuner = autotuner("transpose", store=store, policy=FAST, progress=False)
    tuner.set_training_args(train, ids=ids)
    tuner.tune([cv])
    rows = store.rows("transpose", "test_cpu")
    assert sorted(r.input_id for r in rows) == sorted(ids)
    assert all(r.best in transpose.VARIANT_NAMES and not r.failed for r in rows)
    again = transpose.make_code_variant()
    again.model = SelectorModel.from_dict(store.model("transpose", "test_cpu"))
    for problem in test:
        assert again.select(problem) == cv.select(problem)
        assert np.array_equal(cv(problem), problem.matrix.T)
