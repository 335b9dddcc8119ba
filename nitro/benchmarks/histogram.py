"""Histogram of 8-bit images into 256 bins: six C++ variants, the paper's three features,
and a deterministic generator of photographic and synthetic training/test images."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _variants
from ..variant import CodeVariant, code_variant

_cpp = _variants.histogram
VARIANT_NAMES = ["sort_even", "sort_dynamic", "global_atomic_even", "global_atomic_dynamic",
                 "shared_atomic_even", "shared_atomic_dynamic"]
BINS = _cpp.BINS
KINDS = ["photo", "uniform", "narrow_gaussian", "wide_gaussian", "constant", "gradient", "sparse"]
MIN_BYTES, MAX_BYTES = 1 << 10, 16 << 20


def _as_u8(image) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"histogram input must be a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise TypeError(f"histogram input must have dtype uint8, got {image.dtype}")
    return image if image.flags.c_contiguous else np.ascontiguousarray(image)


class _Variant:
    """One C++ variant behind the input check; picklable by name, so that it can run in a
    profiling subprocess (nitro.profiling)."""

    def __init__(self, name: str):
        self.__name__ = name
        self.__doc__ = f"256-bin histogram, C++ variant {name}"
        self._fn = getattr(_cpp, name)

    def __call__(self, image):
        return self._fn(_as_u8(image))

    def __reduce__(self):
        return _Variant, (self.__name__,)


VARIANTS = {name: _Variant(name) for name in VARIANT_NAMES}


def reference(image) -> np.ndarray:
    return np.bincount(_as_u8(image).ravel(), minlength=BINS).astype(np.uint64)


def baseline(image) -> np.ndarray:
    """What a NumPy user would call: ``np.bincount`` (single-threaded)."""
    return np.bincount(image.ravel(), minlength=BINS)


# -- input features (the paper's: N, N/#bins, standard deviation of a sub-sample) ---------------
def n(image) -> float:
    return float(image.size)


def n_per_bin(image) -> float:
    return image.size / BINS


def subsample_std(image, samples: int = 1024) -> float:
    """Standard deviation of an evenly strided sample of about ``samples`` pixels (in C++ for
    contiguous uint8 images, since it is computed at every dispatch: the binding takes only
    those, unconverted, and refuses anything else with a TypeError, cheaper than checking here)."""
    try:
        return _cpp.subsample_std(image, samples)
    except TypeError:
        pass
    flat = np.asarray(image).reshape(-1)
    if flat.size == 0:
        return 0.0
    return float(flat[:: max(1, flat.size // samples)].std())


FEATURES = {"N": n, "N_per_bin": n_per_bin, "subsample_std": subsample_std}


def make_code_variant(name: str = "histogram") -> CodeVariant:
    return code_variant(name, VARIANTS, FEATURES, default="shared_atomic_even", reference=reference)


# -- inputs --------------------------------------------------------------------------------
def _photos() -> list[np.ndarray]:
    """Grayscale photographs shipped inside scikit-image (none needs a download)."""
    from skimage import color, data
    out = []
    for name in ("camera", "astronaut", "coins", "moon", "page", "text", "coffee", "chelsea",
                 "rocket", "clock", "immunohistochemistry", "hubble_deep_field"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                img = getattr(data, name)()
        except Exception:  # images that need a download are skipped
            continue
        if img.ndim == 3:
            img = (color.rgb2gray(img[..., :3]) * 255).astype(np.uint8)
        out.append(np.ascontiguousarray(img, dtype=np.uint8))
    return out


def make_image(kind: str, nbytes: int, rng: np.random.Generator, photos=None) -> np.ndarray:
    """One image of ``nbytes`` pixels of the given kind."""
    width = max(1, int(np.sqrt(nbytes)))
    height = max(1, nbytes // width)
    shape = (height, width)
    size = height * width
    if kind == "photo":
        photos = photos if photos is not None else _photos()
        if not photos:
            kind = "wide_gaussian"
        else:
            src = photos[rng.integers(len(photos))]
            reps = (-(-height // src.shape[0]), -(-width // src.shape[1]))
            tiled = np.tile(src, reps)
            y0 = rng.integers(0, tiled.shape[0] - height + 1)
            x0 = rng.integers(0, tiled.shape[1] - width + 1)
            return np.ascontiguousarray(tiled[y0:y0 + height, x0:x0 + width])
    if kind == "uniform":
        return rng.integers(0, 256, shape, dtype=np.uint8)
    if kind in ("narrow_gaussian", "wide_gaussian"):
        sd = rng.uniform(1, 4) if kind == "narrow_gaussian" else rng.uniform(30, 80)
        return np.clip(rng.normal(rng.uniform(60, 200), sd, shape), 0, 255).astype(np.uint8)
    if kind == "constant":
        return np.full(shape, rng.integers(0, 256), dtype=np.uint8)
    if kind == "gradient":
        return (np.arange(size, dtype=np.float64).reshape(shape) * 256 / size).astype(np.uint8)
    if kind == "sparse":
        img = np.zeros(size, dtype=np.uint8)
        hits = rng.random(size) < rng.uniform(0.01, 0.1)
        img[hits] = rng.integers(1, 256, hits.sum(), dtype=np.uint8)
        return img.reshape(shape)
    raise ValueError(f"unknown image kind {kind!r}; known: {KINDS}")


def iter_inputs(count: int, seed: int, min_bytes: int = MIN_BYTES, max_bytes: int = MAX_BYTES):
    """``(image, id)`` pairs of :func:`make_inputs`, one at a time (a long stream of images
    never has to fit in memory)."""
    if count < 0 or min_bytes < 1 or max_bytes < min_bytes:
        raise ValueError("make_inputs: need count >= 0 and 1 <= min_bytes <= max_bytes")
    rng = np.random.default_rng(seed)
    photos = _photos()
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        nbytes = int(np.exp(rng.uniform(np.log(min_bytes), np.log(max_bytes))))
        image = make_image(kind, nbytes, rng, photos)
        yield image, f"s{seed}-{i:04d}-{kind}-{image.size}"


def make_inputs(count: int, seed: int, min_bytes: int = MIN_BYTES, max_bytes: int = MAX_BYTES):
    """``count`` images, sizes log-uniform in [min_bytes, max_bytes], kinds in turn;
    returns ``(images, ids)``. Deterministic for a seed."""
    images, ids = [], []
    for image, iid in iter_inputs(count, seed, min_bytes, max_bytes):
        images.append(image)
        ids.append(iid)
    return images, ids


def train_test_inputs(n_train: int = 48, n_test: int = 48, seed: int = 0):
    """Disjoint training and test sets (different seeds; ids never coincide)."""
    train = make_inputs(n_train, seed=2 * seed + 1)
    test = make_inputs(n_test, seed=2 * seed + 2)
    return train, test
