"""A process that ran OpenMP C++ code can fork and run it again in the child (libgomp
alone would hang there)."""
import multiprocessing

import numpy as np

import nitro  # noqa: F401  (registers the release of OpenMP pools before fork)
from nitro.benchmarks import histogram


def run_variant(image, out):
    out.put(histogram.VARIANTS["global_atomic_even"](image).tolist())


def test_fork_after_openmp_does_not_hang():
    image = np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8)
    expected = histogram.VARIANTS["global_atomic_even"](image)        # the parent's pool exists now
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=run_variant, args=(image, out))
    child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        child.join()
        raise AssertionError("the forked child hung in its first OpenMP region")
    assert child.exitcode == 0 and out.get(timeout=5) == expected.tolist()
    assert np.array_equal(histogram.VARIANTS["global_atomic_even"](image), expected)   # parent still fine
