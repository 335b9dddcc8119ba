"""GPU atomic microbenchmarks: their sm_90 SASS (without a GPU) and, on a GPU, their figures."""
import pytest

from nitro import cuda
from nitro.devices import gpu_microbench

REASON = cuda.unavailable()


@pytest.mark.parametrize("kernel, atomic", [("global_atomic", "ATOMG"), ("shared_atomic", "ATOMS")])
def test_every_atomic_runs_in_the_iteration_loop(sass, kernel, atomic):
    """Each iteration is one atomic whose returned value is used (ATOMG/ATOMS, not a
    fire-and-forget RED), all inside loops (the compiler unrolls by 4 plus a remainder loop):
    an atomic hoisted out or merged would not scale with ``iters``."""
    code = sass(gpu_microbench.SOURCE)[kernel]
    loops = [body for body in code.loops() if atomic in body]
    assert loops, code.opcodes
    assert code.opcodes.count(atomic) == sum(body.count(atomic) for body in loops)
    assert not any(op.startswith("RED") for op in code.opcodes)
    assert {body.count(atomic) for body in loops} <= {1, 2, 4, 8}   # one per iteration, unrolled


@pytest.mark.skipif(REASON is None, reason="a CUDA GPU is usable here")
def test_without_a_gpu_every_figure_is_missing_with_the_reason():
    out = gpu_microbench.measure_gpu()
    assert set(out) == set(gpu_microbench.BENCHMARKS)
    assert all(r["value"] is None and "pycuda" in r["missing"] for r in out.values())


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=f"no CUDA GPU here: {REASON}")
def test_gpu_atomic_figures_are_present_and_plausible():
    """Every figure measured (none missing), device-wide nanoseconds per atomic between
    1e-4 ns (10,000 atomics per ns) and 100 ns, and contention costs: one word for the whole
    grid (or block) is slower than a word per thread."""
    out = gpu_microbench.measure_gpu(0, budget_s=2.0)
    assert set(out) == set(gpu_microbench.BENCHMARKS)
    for name, rec in out.items():
        assert rec["source"] == "microbench" and "missing" not in rec, (name, rec)
        assert 1e-4 < rec["value"] < 100, (name, rec)
    assert out["global_atomic_ns"]["value"] > out["global_atomic_uncontended_ns"]["value"]
    assert out["shared_atomic_ns"]["value"] > out["shared_atomic_uncontended_ns"]["value"]
