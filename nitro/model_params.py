"""Checking a model's parameters in plain Python, into the flat layouts the compiled evaluator
(``nitro._selector``) is built from: loading a model and dispatching with it then need no
NumPy (it costs more to import than the rest of the run time together).

:func:`flat_params` checks shapes and finiteness as strictly as the NumPy batch path needs
them and raises ``ValueError`` naming the problem; it returns plain lists (matrices
row-major, flattened) and their sizes.
"""
from __future__ import annotations

import math
from operator import index as _int


def _list(x) -> list:
    """``x`` as a list: a list or tuple as it is, a NumPy array through ``tolist``."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"expected a list, got {type(x).__name__}")
    return x


def real(v) -> float:
    """A number as a float; text and booleans are not numbers here (``float("1.5")`` would be)."""
    if isinstance(v, (str, bytes, bool)):
        raise TypeError(f"expected a number, got {v!r}")
    return float(v)


_PLAIN_REALS = frozenset({float, int})


def vector(x, n: int | None = None) -> list[float] | None:
    """The numbers of a flat list as floats, or ``None`` when it is not ``n`` long."""
    x = _list(x)
    # JSON's numbers checked by type in one C-level pass (a model of 400 trees has 50,000 of them)
    out = list(map(float, x)) if set(map(type, x)) <= _PLAIN_REALS else [real(v) for v in x]
    return out if n is None or len(out) == n else None


def flags(x) -> list[bool]:
    """A flat list of true/false values (0 and 1 too); ``TypeError`` for anything else ("no")."""
    out = []
    for v in _list(x):
        if isinstance(v, (str, bytes)) or v not in (True, False):
            raise TypeError(f"expected true or false, got {v!r}")
        out.append(bool(v))
    return out


def ints(x, n: int | None = None) -> list[int] | None:
    """The integers of a flat list, or ``None`` when it is not ``n`` long."""
    x = _list(x)
    out = list(x) if set(map(type, x)) <= {int} else [_int(v) for v in x]
    return out if n is None or len(out) == n else None


def matrix(x, cols: int | None = None, rows: int | None = None) -> tuple[list[float], int, int] | None:
    """A list of equally long rows of numbers, flattened row-major: ``(flat, rows, cols)``, or
    ``None`` when it is not a matrix of that many rows and columns (``None``: any)."""
    table = [vector(row) for row in _list(x)]
    width = cols if cols is not None else (len(table[0]) if table else 0)
    if (rows is not None and len(table) != rows) or any(len(row) != width for row in table):
        return None
    return [v for row in table for v in row], len(table), width


#: Each kind's parameter names: a reader refuses any other, which a newer nitro may have added
#: with a meaning this one would silently drop (as ``unit`` once was).
TREE_KEYS = frozenset({"children_left", "children_right", "feature", "threshold", "value"})
PARAM_KEYS = {
    "constant": frozenset({"label"}),
    "kernel": frozenset({"signed_log", "mean", "scale", "gamma", "centers", "weights", "offset", "unit"}),
    "svc": frozenset({"log_mask", "mean", "scale", "gamma", "support_vectors", "n_support", "dual_coef",
                      "intercept", "unit"}),
    "tree": TREE_KEYS,
    "gbt": frozenset({"trees", "learning_rate", "init", "variant_codes", "x_float32", "variant_trees"}),
    "linear": frozenset({"log_mask", "mean", "scale", "coef", "intercept", "choose", "unit"}),
    "intervals": frozenset({"feature", "thresholds", "labels"}),
}


def known_keys(data: dict, allowed, what: str) -> None:
    """``ValueError`` naming the first key of ``data`` not in ``allowed``: something this nitro
    cannot evaluate, most likely written by a newer one."""
    if not isinstance(data, dict):
        raise TypeError(f"{what}s must be an object, got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise ValueError(f"{what} {unknown[0]!r} is unknown to this nitro: it was probably written by a newer "
                         f"nitro (upgrade nitro to read it)")


def known_version(value, reads, current: int, what: str) -> None:
    """``ValueError`` unless ``value`` is one of the versions this nitro ``reads`` (an int: not
    true, not 1.0), saying to upgrade where it is a later one than ``current``."""
    if type(value) is not int or value not in reads:
        newer = ": it was probably written by a newer nitro (upgrade nitro to read it)" \
            if type(value) is int and value > current else ""
        raise ValueError(f"unsupported {what} {value!r} (this nitro reads {', '.join(map(str, reads))}){newer}")


def finite(*values: list[float]) -> bool:
    return all(all(map(math.isfinite, v)) for v in values)


def _check_tree(t: dict, d: int, value_width: int | None) -> dict:
    """One tree's arrays (scikit-learn's: children -1 at leaves, children after their parent, so
    traversals end), checked, with ``value`` flat (``value_width`` numbers per node, or one)."""
    known_keys(t, TREE_KEYS, "tree parameter")
    cl, cr, feat = ints(t["children_left"]), ints(t["children_right"]), ints(t["feature"])
    n = len(cl)
    thr = vector(t["threshold"], n)
    if value_width is None:
        value = vector(t["value"], n)
    else:
        table = matrix(t["value"], value_width, n)
        value = table[0] if table is not None else None
    ok = n >= 1 and len(cr) == n and len(feat) == n and thr is not None and value is not None and finite(thr, value)
    # a split node's children come after it and exist, and it splits on a known feature
    ok = ok and all((left < 0 and right < 0) or (i < left < n and i < right < n and 0 <= f < d)
                    for i, left, right, f in zip(range(n), cl, cr, feat))
    if not ok:
        raise ValueError("tree model parameters are inconsistent (shapes, children, features or values)")
    return {"cl": cl, "cr": cr, "f": [f if f >= 0 else 0 for f in feat], "thr": thr, "v": value}


def _pad(trees: list[dict], key: str, fill) -> list:
    """One key of several trees' arrays, each padded to the largest tree, concatenated."""
    width = max(len(t[key]) for t in trees)
    out = []
    for t in trees:
        out += t[key]
        out += [fill] * (width - len(t[key]))
    return out


def units(p: dict, d: int, kind: str) -> list[float]:
    """A model's optional ``unit`` per column (each column is divided by it before its
    logarithm: :func:`nitro.learn.preprocessing.input_units`), every unit 1 without it."""
    unit = vector(p["unit"], d) if "unit" in p else [1.0] * d
    if unit is None or not all(math.isfinite(u) and u > 0 for u in unit):
        raise ValueError(f"{kind} model units must be {d} positive finite numbers")
    return unit


def flat_params(kind: str, p: dict, d_in: int, d_dev: int, k: int) -> dict:
    """Model ``p`` of ``kind`` (``d_in`` input and ``d_dev`` device features, ``k`` variants)
    checked, as the compiled evaluator's flat arguments; ``ValueError`` names what is wrong."""
    d = d_in + d_dev
    if kind in PARAM_KEYS:
        known_keys(p, PARAM_KEYS[kind], f"{kind} model parameter")
    if kind == "constant":
        if not (isinstance(p.get("label"), int) and 0 <= p["label"] < k):
            raise ValueError("constant model with an invalid label")
        return {"label": p["label"]}
    if kind == "kernel":
        centers, weights = matrix(p["centers"], d_in), None
        if centers is not None:
            weights = matrix(p["weights"], k, centers[1])
        mean, scale, offset = vector(p["mean"], d_in), vector(p["scale"], d_in), vector(p["offset"], k)
        if None in (centers, weights, mean, scale, offset) or centers[1] == 0:
            raise ValueError("kernel model parameters have inconsistent shapes")
        gamma = real(p["gamma"])
        if p.get("signed_log", True) is not True:
            raise ValueError("kernel model: signed_log must be true (the only input transform there is)")
        if not finite(centers[0], weights[0], offset, mean, scale, [gamma]):
            raise ValueError("kernel model parameters are not all finite")
        positive_scale(scale, kind, gamma)
        unit = units(p, d_in, kind)
        return {"mean": mean, "scale": scale, "gamma": gamma, "centers": centers[0], "weights": weights[0],
                "offset": offset, "unit": unit}
    if kind == "svc":
        n_support = ints(p["n_support"], k)
        sv = matrix(p["support_vectors"], d)
        coef = matrix(p["dual_coef"], sv[1], k - 1) if sv is not None else None
        mean, scale, b = vector(p["mean"], d), vector(p["scale"], d), vector(p["intercept"], k * (k - 1) // 2)
        log_mask = flags(p["log_mask"])
        gamma = real(p["gamma"])
        if (k < 2 or None in (n_support, sv, coef, mean, scale, b) or len(log_mask) != d
                or sum(n_support) != sv[1] or sv[1] == 0):
            raise ValueError("svc model parameters have inconsistent shapes")
        if not finite(sv[0], coef[0], b, mean, scale, [gamma]):
            raise ValueError("svc model parameters are not all finite")
        if min(n_support) < 0:
            raise ValueError(f"svc model n_support must count support vectors (0 or more), got {n_support}")
        positive_scale(scale, kind, gamma)
        return {"log_mask": log_mask, "mean": mean, "scale": scale, "gamma": gamma, "sv": sv[0],
                "n_support": n_support, "dual_coef": coef[0], "intercept": b, "unit": units(p, d, kind)}
    try:
        return _flat_time_kind(kind, p, d, k)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{kind} model parameters are malformed: {exc!r}") from None


def positive_scale(scale: list[float], kind: str, gamma: float | None = None) -> None:
    """Standardising divides by ``scale``: a scale of 0 (or below) would make every score
    infinite or reversed; scikit-learn's scaler never exports one. An RBF's ``gamma`` is 0 or
    more (the compiled evaluator refuses others, but only when first used)."""
    if not all(s > 0 for s in scale):
        raise ValueError(f"{kind} model scale must be positive, got {scale}")
    if gamma is not None and not gamma >= 0:
        raise ValueError(f"{kind} model gamma must be 0 or more, got {gamma}")


def variant_starts(p: dict, n_trees: int, k: int) -> list[int]:
    """A ``gbt`` model's tree offsets per variant from its optional ``variant_trees`` (how many
    consecutive trees score each variant alone: one booster per variant); ``[]`` without."""
    counts = p.get("variant_trees")
    if counts is None:
        return []
    counts = _list(counts)
    if (len(counts) != k or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)
            or sum(counts) != n_trees):
        raise ValueError(f"gbt variant_trees must be {k} tree counts summing to the {n_trees} trees")
    starts = [0]
    for c in counts:
        starts.append(starts[-1] + c)
    return starts


def _flat_time_kind(kind: str, p: dict, d: int, k: int) -> dict:
    """:func:`flat_params` of the time learners' kinds (see :mod:`nitro.model`)."""
    if kind == "tree":
        return {"n_trees": 1, **_check_tree(p, d, k)}
    if kind == "gbt":
        lr, init = real(p["learning_rate"]), real(p["init"])
        if not (isinstance(p["trees"], list) and p["trees"] and math.isfinite(lr) and math.isfinite(init)):
            raise ValueError("gbt model needs trees, a finite learning_rate and init")
        codes = matrix(p["variant_codes"], rows=k)
        if codes is None or not finite(codes[0]):
            raise ValueError("gbt model needs variant_codes, one finite row per variant")
        trees = [_check_tree(t, d + codes[2], None) for t in p["trees"]]
        return {"n_trees": len(trees), "cl": _pad(trees, "cl", -1), "cr": _pad(trees, "cr", -1),
                "f": _pad(trees, "f", 0), "thr": _pad(trees, "thr", 0.0), "v": _pad(trees, "v", 0.0),
                "lr": lr, "init": init, "codes": codes[0], "n_variants": k, "f32": bool(p.get("x_float32", True)),
                "starts": variant_starts(p, len(trees), k)}
    if kind == "linear":
        coef = matrix(p["coef"], k, d)
        mean, scale, b = vector(p["mean"], d), vector(p["scale"], d), vector(p["intercept"], k)
        log_mask = flags(p["log_mask"])
        if (None in (coef, mean, scale, b) or len(log_mask) != d or p["choose"] not in ("max", "min")
                or not finite(coef[0], b, mean, scale)):
            raise ValueError("linear model parameters have inconsistent shapes or are not finite")
        positive_scale(scale, kind)
        return {"log_mask": log_mask, "mean": mean, "scale": scale, "coef": coef[0], "intercept": b,
                "choose_max": p["choose"] == "max", "unit": units(p, d, kind)}
    if kind == "intervals":
        thr, labels = vector(p["thresholds"]), _list(p["labels"])
        if not (isinstance(p["feature"], int) and 0 <= p["feature"] < d and len(labels) == len(thr) + 1
                and finite(thr) and all(a < b for a, b in zip(thr, thr[1:]))
                and all(isinstance(v, int) and 0 <= v < k for v in labels)):
            raise ValueError("intervals model: feature, ascending finite thresholds and one more label needed")
        return {"feature": p["feature"], "thresholds": thr, "labels": list(labels)}
    raise ValueError(f"unknown model kind {kind!r}")
