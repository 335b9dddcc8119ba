"""Sort of float32/float64 keys: three C++ variants (the paper's merge, locality and radix
sorts; radix is a hybrid MSD+LSD radix sort, see ``variants_cpp/sort.hpp``), and a fourth,
``simd_sample`` (a sample sort whose buckets are sorted by Highway's vectorised quicksort), where
nitro was built with Highway (``HAVE_HIGHWAY``); the paper's
features N, NBits and #AscSeq, and a deterministic generator of uniform, reverse-sorted and
almost-sorted keys.

Every variant returns a sorted copy and leaves its input untouched, so that every variant and
every timing repetition sees the same input. NaNs are sorted last, as by ``np.sort``
(returned as the canonical quiet NaN: payload and sign bit are not kept).
"""
from __future__ import annotations

import numpy as np

from .. import _variants
from ..variant import CodeVariant, code_variant

_cpp = _variants.sort
HAVE_HIGHWAY = hasattr(_cpp, "simd_sample")
VARIANT_NAMES = ["merge", "locality", "radix"] + (["simd_sample"] if HAVE_HIGHWAY else [])
KINDS = ["uniform", "reverse", "almost_sorted"]
DTYPES = [np.float32, np.float64]
MIN_KEYS, MAX_KEYS = 100_000, 20_000_000
DEFAULT_MAX_KEYS = 2_000_000       # keeps exhaustive measurement of the default sets to ~1 minute
ASC_SEQ_SAMPLE = 8192              # #AscSeq is exact up to this many keys, estimated above


def _check_keys(keys) -> np.ndarray:
    """``keys`` itself, once it is a 1-D float32 or float64 array (either byte order), else an
    error naming what it is. O(1): the input features call it too, so that a dispatched call with
    a list or an integer array is refused by name before a feature reads ``.size`` of it."""
    if not isinstance(keys, np.ndarray):
        raise TypeError(f"sort input must be a numpy array, got {type(keys).__name__}")
    if keys.dtype.kind != "f" or keys.dtype.itemsize not in (4, 8):
        raise TypeError(f"sort input must have dtype float32 or float64, got {keys.dtype}")
    if keys.ndim != 1:
        raise ValueError(f"sort input must be 1-D, got shape {keys.shape}")
    return keys


def _as_keys(keys) -> np.ndarray:
    keys = _check_keys(keys)
    if not keys.dtype.isnative:                                # big-endian data: a native copy
        keys = keys.astype(keys.dtype.newbyteorder("="))
    return keys if keys.flags.c_contiguous else np.ascontiguousarray(keys)


def _wrap(name, fn):
    def variant(keys):
        return fn(_as_keys(keys))
    variant.__name__ = name
    variant.__doc__ = f"sorted copy of float keys, C++ variant {name}"
    return variant


VARIANTS = {name: _wrap(name, getattr(_cpp, name)) for name in VARIANT_NAMES}


def reference(keys) -> np.ndarray:
    return np.sort(_as_keys(keys))


def baseline(keys) -> np.ndarray:
    """What a NumPy user would call: ``np.sort`` (single-threaded)."""
    return np.sort(keys)


# -- input features (the paper's: N, NBits, #AscSeq) -----------------------------------------
def n(keys) -> float:
    return float(_check_keys(keys).size)


def n_bits(keys) -> float:
    return float(_check_keys(keys).dtype.itemsize * 8)


def asc_seq(keys, sample: int = ASC_SEQ_SAMPLE) -> float:
    """Number of maximal ascending runs, ``1 + #{i : keys[i+1] < keys[i]}``. Exact up to
    ``sample`` keys; above, the descent rate is estimated from ``sample`` adjacent pairs at
    fixed pseudo-random positions, so the feature costs O(sample), not O(N), at dispatch."""
    size = _check_keys(keys).size
    if size < 2:
        return float(size)
    if size <= sample:
        return float(1 + np.count_nonzero(keys[1:] < keys[:-1]))
    pos = np.random.default_rng(0).integers(0, size - 1, sample)
    rate = np.count_nonzero(keys[pos + 1] < keys[pos]) / sample
    return float(1 + round(rate * (size - 1)))


FEATURES = {"N": n, "NBits": n_bits, "#AscSeq": asc_seq}


def make_code_variant(name: str = "sort") -> CodeVariant:
    return code_variant(name, VARIANTS, FEATURES, default="merge", reference=reference)


# -- inputs --------------------------------------------------------------------------------
def make_keys(kind: str, size: int, dtype, rng: np.random.Generator) -> np.ndarray:
    """``size`` keys of ``dtype``: ``uniform`` in [-1, 1), ``reverse`` sorted, or
    ``almost_sorted`` (a sorted sequence with 20-25% of its keys swapped in random pairs)."""
    if kind not in KINDS:
        raise ValueError(f"unknown key kind {kind!r}; known: {KINDS}")
    keys = rng.uniform(-1.0, 1.0, size).astype(dtype)
    if kind == "uniform":
        return keys
    keys.sort()
    if kind == "reverse":
        return np.ascontiguousarray(keys[::-1])
    swapped = int(size * rng.uniform(0.20, 0.25)) // 2 * 2
    pos = rng.choice(size, swapped, replace=False)
    first, second = pos[0::2], pos[1::2]
    keys[first], keys[second] = keys[second], keys[first]     # fancy indexing copies
    return keys


def make_inputs(count: int, seed: int, min_keys: int = MIN_KEYS, max_keys: int = DEFAULT_MAX_KEYS):
    """``count`` key arrays, sizes log-uniform in [min_keys, max_keys], kinds in turn and
    both dtypes; returns ``(arrays, ids)``. Deterministic for a seed."""
    if count < 0 or min_keys < 1 or max_keys < min_keys:
        raise ValueError("make_inputs: need count >= 0 and 1 <= min_keys <= max_keys")
    rng = np.random.default_rng(seed)
    arrays, ids = [], []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        dtype = DTYPES[(i // len(KINDS)) % len(DTYPES)]
        size = int(np.exp(rng.uniform(np.log(min_keys), np.log(max_keys))))
        arrays.append(make_keys(kind, size, dtype, rng))
        ids.append(f"s{seed}-{i:04d}-{kind}-{np.dtype(dtype).name}-{size}")
    return arrays, ids


def train_test_inputs(n_train: int = 48, n_test: int = 48, seed: int = 0,
                      min_keys: int = MIN_KEYS, max_keys: int = DEFAULT_MAX_KEYS):
    """Disjoint training and test sets (different seeds; ids never coincide). The paper's
    range is 100 K to 20 M keys: pass ``max_keys=MAX_KEYS``."""
    train = make_inputs(n_train, seed=2 * seed + 1, min_keys=min_keys, max_keys=max_keys)
    test = make_inputs(n_test, seed=2 * seed + 2, min_keys=min_keys, max_keys=max_keys)
    return train, test
