"""Profiles for P-DFS: every variant of a code variant on its training inputs, and the
application proxies at intensities 0-5, in one profiling run (one valgrind process on a CPU)."""
from __future__ import annotations

from typing import Callable, Sequence

from .. import _variants
from ..dispatch import feature_vector
from .cpu import profile_calls

# The paper's proxy names (Table 3) -> the CPU proxy kinds of nitro._variants.proxies.
PROXIES = {"SP-GFLOP": "SP_GFLOP", "DP-GFLOP": "DP_GFLOP", "ATOMIC": "ATOMIC", "MEM-BW": "MEM_BW",
           "SH-MEM-BW": "SH_MEM_BW"}
INTENSITIES = range(6)
PROXY_ELEMENTS = 4096  # five one-instruction slots each: ~25k instructions per proxy call


def variant_calls(cv, args_list: Sequence[tuple], ids: Sequence[str]) -> list[tuple[tuple[str, str], Callable, tuple]]:
    """``((variant, input id), fn, args)`` for every variant allowed on every input (a
    variant excluded by a constraint is not run, as in measurement)."""
    calls = []
    for iid, args in zip(ids, args_list):
        feats = feature_vector(cv.feature_names, cv.compute_features(*args), f"{cv.name}, input {iid}: ")
        allowed = cv.allowed(feats)
        calls.extend(((v, iid), fn, args) for v, fn in cv.variants.items() if allowed.get(v, True))
    return calls


def proxy_calls(n: int = PROXY_ELEMENTS, intensities=INTENSITIES) -> list[tuple[tuple[str, int], Callable, tuple]]:
    """``((proxy, φ), fn, args)`` for the five CPU proxies at every intensity."""
    kinds = _variants.proxies.Kind.__members__
    return [((name, phi), _variants.proxies.run, (kinds[kind], phi, n))
            for name, kind in PROXIES.items() for phi in intensities]


def run_profiles(keyed_calls, profiler=profile_calls, **kwargs) -> list[tuple]:
    """``[(key, metrics)]`` of ``[(key, fn, args)]``, all profiled in one run."""
    keyed_calls = list(keyed_calls)
    results = profiler([(fn, args) for _, fn, args in keyed_calls], **kwargs) if keyed_calls else []
    return [(key, m) for (key, _, _), m in zip(keyed_calls, results)]
