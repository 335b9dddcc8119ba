"""GPU application proxies: generated source, and their sm_90 SASS (without a GPU): each
proxy's operations sit inside the element loop, ``phi * GROUPS`` of them per element."""
import numpy as np
import pytest

from nitro import cuda
from nitro.devices import gpu_proxies

# SASS opcodes of each kind's operation on sm_90 (a global atomic whose result is unused is a REDG)
OPCODES = {"SP-GFLOP": ["FFMA"], "DP-GFLOP": ["DFMA"], "ATOMIC": ["REDG"], "MEM-BW": ["LDG"],
           "SH-MEM-BW": ["LDS", "STS"]}
# What identifies each kind's operation in the generated source, and the integer fillers
MARKERS = {"SP-GFLOP": "fmaf(", "DP-GFLOP": "= fma(", "ATOMIC": "atomicAdd(", "MEM-BW": "big[",
           "SH-MEM-BW": "volatile float* w", "filler": "k = k * k +"}


def _name(kind, phi):
    return f"proxy_{kind.replace('-', '_')}_{phi}"


@pytest.fixture(scope="module")
def proxies_sass(sass):
    """Every proxy (all kinds and intensities), compiled together as pycuda compiles each."""
    return sass("\n".join(gpu_proxies.source(kind, phi).replace("void proxy(", f"void {_name(kind, phi)}(")
                          for kind in gpu_proxies.KINDS for phi in range(6)))


@pytest.mark.parametrize("kind", gpu_proxies.KINDS)
def test_proxy_source_has_phi_fifths_of_its_kind(kind):
    for phi in range(6):
        src = gpu_proxies.source(kind, phi)
        counts = {name: src.count(marker) for name, marker in MARKERS.items()}
        assert counts[kind] == phi * gpu_proxies.GROUPS
        assert counts["filler"] == (5 - phi) * gpu_proxies.GROUPS
        assert all(n == 0 for k, n in counts.items() if k not in (kind, "filler"))


def test_proxy_arguments_are_checked():
    with pytest.raises(ValueError, match="0..5"):
        gpu_proxies.source("ATOMIC", 6)
    with pytest.raises(ValueError, match="unknown GPU proxy"):
        gpu_proxies.source("FLOP", 1)


@pytest.mark.parametrize("kind", gpu_proxies.KINDS)
def test_proxy_operations_run_in_the_element_loop_and_scale_with_phi(proxies_sass, kind):
    """In the SASS, the element loop (the one storing ``out[i]``) holds ``GROUPS`` more
    operations of the kind per step of ``phi`` (at ``phi = 0`` at most the loop's own: an FFMA
    that computes ``out[i]``), and none of them is left outside a loop: an operation the compiler
    hoisted out of the loop (as the old SH-MEM-BW loads were) or folded away would not scale with
    the number of elements."""
    for op in OPCODES[kind]:
        base = proxies_sass[_name(kind, 0)].loop_with("STG").count(op)
        in_loop = [proxies_sass[_name(kind, phi)].loop_with("STG").count(op) for phi in range(6)]
        assert [n - in_loop[1] for n in in_loop[1:]] == [j * gpu_proxies.GROUPS for j in range(5)], (op, in_loop)
        assert gpu_proxies.GROUPS <= in_loop[1] <= gpu_proxies.GROUPS + base, (op, in_loop)
        for phi in range(1, 6):
            code = proxies_sass[_name(kind, phi)]
            setup = 1 if op == "STS" else 0   # the tile's initialisation loop, before the element loop
            assert code.opcodes.count(op) == sum(body.count(op) for body in code.loops()) == in_loop[phi] + setup, \
                (phi, op, code.opcodes)


@pytest.mark.skipif(cuda.unavailable() is None, reason="a CUDA GPU is usable here")
def test_without_a_gpu_proxies_say_why():
    with pytest.raises(RuntimeError, match="not available"):
        gpu_proxies.run("SP-GFLOP", 2, 10)


@pytest.mark.gpu
@pytest.mark.skipif(cuda.unavailable() is not None, reason=f"no CUDA GPU here: {cuda.unavailable()}")
@pytest.mark.parametrize("kind", gpu_proxies.KINDS)
def test_gpu_proxies_compute_what_they_claim(kind):
    """What the kernel wrote: every element's output is finite, and the ATOMIC proxy's bins
    hold exactly the atomics it claims (``phi * GROUPS * n``)."""
    n = 100_003
    for phi in (0, 3, 5):
        claimed = gpu_proxies.run(kind, phi, n)
        out, bins = gpu_proxies.outputs(n)
        assert out.shape == (n,) and np.isfinite(out).all() and np.abs(out).max() < 1e30, (kind, phi)
        assert int(bins.sum()) == (claimed if kind == "ATOMIC" else 0), (kind, phi)
        assert claimed == phi * gpu_proxies.GROUPS * n
