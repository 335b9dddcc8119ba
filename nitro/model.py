"""Trained selectors as plain data: exported from a fitted learner, stored as JSON,
validated on load, and evaluated by the compiled evaluator (one input) or NumPy (batches),
never scikit-learn at dispatch time.

A model maps an input-feature vector (plus, for a transferred model, the target's device
features, held as constants) to a variant name. Loading one and dispatching with it import no
NumPy (:mod:`nitro.model_params` checks it in plain Python); the batch methods
(:meth:`SelectorModel.scores`, :meth:`~SelectorModel.predict_index`,
:meth:`~SelectorModel.predict`) load NumPy when first used.
"""
from __future__ import annotations

import math

from .model_params import flat_params, known_keys, known_version, variant_starts

#: The model format written. 2: parameters may hold ``unit`` (and gbt ``variant_trees``),
#: which readers of format 1 silently dropped, choosing differently; readers of 2 refuse
#: what they do not know. Every format in :data:`READS` loads.
FORMAT = 2
READS = (1, 2)
KINDS = ("constant", "svc", "kernel", "tree", "gbt", "linear", "intervals")
FIELDS = ("variants", "input_features", "kind", "params", "device_features", "provenance")


def _strings(items, empty_ok=False) -> list[str]:
    if not isinstance(items, list) or not (items or empty_ok) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"expected a list of names, got {items!r}")
    if len(set(items)) != len(items):
        raise ValueError(f"names repeated in {items!r}")
    return items


def _plain(value):
    """A copy of nested dicts and lists (their leaves shared: numbers and text do not change);
    faster than ``copy.deepcopy`` (no memo: 1.6–2× on 190,000 numbers)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) if isinstance(v, (dict, list, tuple)) else v for v in value]
    return value


class SelectorModel:
    """One device's selector as plain data: ``variants`` (class labels, in the learner's
    order), ``input_features``, ``kind`` (one of :data:`KINDS`, see the module's kind notes),
    its ``params``, ``device_features`` (constants appended to the input features) and
    ``provenance``."""

    def __init__(self, variants: list[str], input_features: list[str], kind: str, params: dict | None = None,
                 device_features: dict[str, float] | None = None, provenance: dict | None = None):
        self.variants = variants
        self.input_features = input_features
        self.kind = kind
        self.params = {} if params is None else params
        self.device_features = {} if device_features is None else device_features
        self.provenance = {} if provenance is None else provenance
        self._cache = None          # NumPy arrays of the batch path
        self._flat = None           # checked plain lists of the compiled evaluator
        self._compiled = None

    def __repr__(self):
        return "SelectorModel(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in FIELDS) + ")"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in FIELDS)

    __hash__ = None

    def __getstate__(self):
        """Pickled and deep-copied without the compiled evaluator (a C++ object, which neither
        can copy); :meth:`compiled` rebuilds it when first used."""
        return {**self.__dict__, "_compiled": None}

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_estimator(cls, est, input_features, device_features=None, provenance=None, variants=None):
        """Export a fitted :class:`nitro.learn.SVMSelector` or time learner (one with
        ``export()``). ``variants`` names the variant of each class index (for time learners
        and for label learners fitted on variant indices)."""
        classes = [str(c) for c in est.classes_]
        if variants is not None:
            variants = [str(v) for v in variants]
            classes = [variants[int(c)] for c in est.classes_] if not hasattr(est, "export") else variants
        common = dict(variants=classes, input_features=list(input_features),
                      device_features=dict(device_features or {}), provenance=dict(provenance or {}))
        if hasattr(est, "export"):
            kind, params = est.export()
            model = cls(kind=kind, params=params, **common)
            model._validate()
            return model
        if getattr(est, "pipeline_", None) is None:
            return cls(kind="constant", params={"label": 0}, **common)
        log, scaler, svc = (est.pipeline_[i] for i in range(3))
        params = {
            **log.export(),
            "mean": scaler.mean_.tolist(), "scale": scaler.scale_.tolist(),
            "gamma": float(svc._gamma),
            "support_vectors": svc.support_vectors_.tolist(),
            "n_support": svc.n_support_.tolist(),
            "dual_coef": svc._dual_coef_.tolist(),
            "intercept": svc._intercept_.tolist(),
        }
        return cls(kind="svc", params=params, **common)

    def to_dict(self) -> dict:
        """The model as plain data (JSON's types), a copy: editing it leaves this model, whose
        batch path reads ``params`` and whose compiled evaluator was built from them, as it is."""
        return _plain({"format": FORMAT, "kind": self.kind, "variants": self.variants,
                       "input_features": self.input_features, "device_features": self.device_features,
                       "params": self.params, "provenance": self.provenance})

    @classmethod
    def from_dict(cls, data) -> "SelectorModel":
        """Load and validate a model read from the store."""
        if not isinstance(data, dict):
            raise ValueError("a model must be a JSON object")
        if data.get("format") == "nitro-bundle":     # nitro.bundle.FORMAT (bundle imports this module)
            raise ValueError("a bundle of models, not one model: load it with nitro.bundle.Bundle.load "
                             "(on the command line: --bundle)")
        known_version(data.get("format"), READS, FORMAT, "model format")
        known_keys(data, ("format", *FIELDS), "model field")
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown model kind {kind!r}")
        try:
            model = cls(variants=_strings(data["variants"]), input_features=_strings(data["input_features"], empty_ok=True),
                        kind=kind, params=dict(data["params"]),
                        device_features={str(k): float(v) for k, v in dict(data.get("device_features", {})).items()},
                        provenance=dict(data.get("provenance", {})))
            if not all(math.isfinite(v) for v in model.device_features.values()):
                raise ValueError(f"device features not all finite: {model.device_features}")
            model._validate()
        except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
            raise ValueError(f"malformed {kind} model: {exc!r}") from None
        return model

    @classmethod
    def from_checked(cls, data: dict, flat: dict) -> "SelectorModel":
        """A model that :meth:`from_dict` checked in another process of this program, with the
        flat lists that check made (refining mode's refit process sends both): rebuilt without
        checking it again, which for a 530 KB model of 6 × 50 trees took 9 ms of Python in the
        process serving calls."""
        model = cls(variants=list(data["variants"]), input_features=list(data["input_features"]), kind=data["kind"],
                    params=data["params"], device_features=dict(data.get("device_features", {})),
                    provenance=dict(data.get("provenance", {})))
        model._flat = flat
        return model

    def _validate(self) -> dict:
        """Check the parameters (shapes, finiteness; ``ValueError`` naming the problem) and keep
        them as the compiled evaluator's flat lists."""
        self._flat = flat_params(self.kind, self.params, len(self.input_features), len(self.device_features),
                                 len(self.variants))
        return self._flat

    # -- prediction --------------------------------------------------------------------------
    def compiled(self):
        """The model as a compiled evaluator (``nitro._selector``): ``predict_one(values)``
        gives the variant index for one feature list in about a microsecond, or -1 when the
        values are not ``len(input_features)`` finite numbers; ``predict_batch(X)`` for many (-1
        for each row that is not finite)."""
        if self._compiled is None:
            self._compiled = _compile(self.kind, self._flat or self._validate(), len(self.input_features),
                                      [float(v) for v in self.device_features.values()])
        return self._compiled

    def _arrays(self):
        import numpy as np
        if self._cache is None:
            p = self.params
            if self.kind == "constant":
                self._cache = {}
            elif self.kind == "kernel":
                C = np.asarray(p["centers"], dtype=np.float64)
                self._cache = {"mean": np.asarray(p["mean"]), "scale": np.asarray(p["scale"]),
                               "inv_unit": _inv_unit(p, C.shape[1]),
                               "centers": C, "c_sq": (C * C).sum(axis=1),
                               "W": np.asarray(p["weights"]), "b": np.asarray(p["offset"])}
            else:
                k = len(self.variants)
                st = np.concatenate([[0], np.cumsum(p["n_support"])]).astype(int)
                coef = np.asarray(p["dual_coef"])
                pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
                # one row of weights over all support vectors per one-versus-one pair
                W = np.zeros((len(pairs), st[-1]))
                for q, (i, j) in enumerate(pairs):
                    W[q, st[i]:st[i + 1]] = coef[j - 1, st[i]:st[i + 1]]
                    W[q, st[j]:st[j + 1]] = coef[i, st[j]:st[j + 1]]
                win_i = np.zeros((len(pairs), k))
                win_j = np.zeros((len(pairs), k))
                for q, (i, j) in enumerate(pairs):
                    win_i[q, i] = win_j[q, j] = 1.0
                sv = np.asarray(p["support_vectors"])
                self._cache = {
                    "log": np.asarray(p["log_mask"], dtype=bool), "inv_unit": _inv_unit(p, len(p["log_mask"])),
                    "mean": np.asarray(p["mean"]), "scale": np.asarray(p["scale"]),
                    "sv": sv, "sv_sq": (sv ** 2).sum(axis=1), "Wt": W.T.copy(),
                    "b": np.asarray(p["intercept"]), "win_i": win_i, "win_j": win_j,
                    "dev": np.asarray(list(self.device_features.values()), dtype=np.float64),
                }
        return self._cache

    def kernel_inputs(self, X):
        """A ``kernel`` model's view of raw input features ``X`` (n, d_in): each feature in its
        unit, signed log, standardised; the space its centres live in."""
        import numpy as np
        a = self._arrays()
        X = np.atleast_2d(np.asarray(X, dtype=np.float64)) * a["inv_unit"]
        return (np.sign(X) * np.log1p(np.abs(X)) - a["mean"]) / a["scale"]

    def input_units(self) -> list[float]:
        """Each input feature's unit before the model's logarithm (``params["unit"]`` of the
        ``kernel``, ``svc`` and ``linear`` kinds; 1 where a model has none)."""
        d = len(self.input_features)
        return [float(u) for u in self.params.get("unit", [1.0] * d)[:d]] if self.kind in ("kernel", "svc", "linear") \
            else [1.0] * d

    def relative_times(self, scores, choice: int) -> list[float] | None:
        """Each variant's predicted time over the ``choice``'s, read from one row of
        :meth:`scores`, or ``None`` when this kind's scores say nothing about time. ``kernel``:
        the ratio of predicted fractions of the optimum (+inf where a variant's is not
        positive: predicted far slower than any fraction can say); ``gbt``: the exponential of
        the gap in predicted log speed-up. Refining mode prices an explored call with it."""
        if self.kind == "kernel":
            own = scores[choice]
            if not own > 0.0:
                return None
            return [own / s if s > 0.0 else math.inf for s in scores]
        if self.kind == "gbt":
            own = scores[choice]
            if not math.isfinite(own):
                return None
            return [math.exp(min(own - s, 700.0)) if math.isfinite(s) else math.inf for s in scores]
        return None

    def scores(self, X):
        """Scores (n, len(variants)) of each row of input features ``X`` (n, d_in) whose row-wise
        argmax is the model's choice (ties to the lower index). What a score means depends on the
        kind: ``kernel``, the predicted fraction of the optimum ``t_best / t_v``; ``svc``, the
        one-versus-one votes; ``tree``, minus the predicted cost; ``gbt``, the predicted log
        speed-up; ``linear``, the linear score (negated for ``choose: min``); ``constant`` and
        ``intervals``, 1 for the chosen variant and 0 elsewhere. The gap between the two highest
        scores is how sure the model is (refining mode explores where it is small)."""
        import numpy as np
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if X.ndim != 2 or X.shape[1] != len(self.input_features) or not np.isfinite(X).all():
            bad = "" if X.ndim != 2 or X.shape[1] != len(self.input_features) else \
                f", {int((~np.isfinite(X)).any(axis=1).sum())} of them with a value that is no finite number"
            raise ValueError(f"expected rows of {len(self.input_features)} input features "
                             f"({', '.join(self.input_features)}), got an array of shape {X.shape}{bad}")
        k = len(self.variants)
        if self.kind == "constant":
            return np.eye(k)[np.full(X.shape[0], self.params["label"])]
        if self.kind in EXTRA_KINDS:
            if self.device_features:
                dev = np.asarray(list(self.device_features.values()), dtype=np.float64)
                X = np.hstack([X, np.broadcast_to(dev, (X.shape[0], dev.size))])
            if self._cache is None:
                self._cache = _extra_arrays(self.kind, self.params)
            return _scores_extra(self.kind, self._cache, X, k)
        a = self._arrays()
        if self.kind == "kernel":
            Z = self.kernel_inputs(X)
            d2 = (Z * Z).sum(axis=1)[:, None] + a["c_sq"][None, :] - 2.0 * (Z @ a["centers"].T)
            return np.exp(-self.params["gamma"] * np.maximum(d2, 0.0)) @ a["W"] + a["b"]
        if a["dev"].size:
            X = np.hstack([X, np.broadcast_to(a["dev"], (X.shape[0], a["dev"].size))])
        X = X * a["inv_unit"]
        X[:, a["log"]] = np.log1p(np.maximum(X[:, a["log"]], 0.0))
        X = (X - a["mean"]) / a["scale"]
        # squared distances as libsvm computes them: x.x + sv.sv - 2 x.sv
        d2 = (X * X).sum(axis=1)[:, None] + a["sv_sq"][None, :] - 2.0 * (X @ a["sv"].T)
        dec = np.exp(-self.params["gamma"] * d2) @ a["Wt"] + a["b"]
        # libsvm's one-versus-one vote: a positive decision votes for the pair's first class;
        # argmax breaks ties towards the lower class index, as libsvm does
        pos = dec > 0
        return pos @ a["win_i"] + (~pos) @ a["win_j"]

    def predict_index(self, X):
        """Index into :attr:`variants` for each row of input features ``X`` (n, d_in)."""
        return self.scores(X).argmax(axis=1)

    def predict(self, X) -> list[str]:
        return [self.variants[i] for i in self.predict_index(X)]


# "kernel" (nitro.transfer.fit, the Kronecker learner's export): z = (sign(x')·log1p|x'| − mean)
# / scale with x' = x / unit (``unit`` optional, every unit 1 without it: nitro.learn.preprocessing.input_units);
# scores = exp(−gamma·|z − centers|²) @ weights + offset, the predicted fractions of the optimum.
# "svc" (nitro.learn.SVMSelector): libsvm's one-versus-one RBF SVC on z = (T(x) − mean) / scale,
# x = [input features ∘ device features], T = log1p(x / unit) on the ``log_mask`` columns and x
# elsewhere (``unit`` optional, every unit 1 without it: nitro.learn.preprocessing.LogHeavyTails).

# -- kinds of the time learners (nitro.learn.regression, costmin, tree, threshold) -------------
# Every kind sees the row x = [input features ∘ device features] (device features are the
# model's constants) and chooses an index into ``variants``.
#
# "tree"      one regression tree (scikit-learn arrays, see nitro.learn.base.tree_arrays) whose
#             leaf ``value`` is a vector of predicted costs per variant; choose the argmin.
#             Comparisons use x rounded to float32, exactly as scikit-learn does.
# "gbt"       gradient-boosted regression trees over [x ∘ variant_codes[v]] (one-hot identity
#             or configuration parameters): the prediction for variant v is
#             ``init + learning_rate · Σ_trees value[leaf]`` (predicted log speed-up over a
#             reference); choose the argmax. params: trees (list of tree arrays with one
#             value per node), learning_rate, init, variant_codes (n_variants × q), and
#             x_float32 (default true: round the rows to float32 before comparisons, as
#             scikit-learn's GradientBoostingRegressor does; false for histogram boosting);
#             optional variant_trees (one count per variant): the trees are one booster per
#             variant in turn, and variant v sums only its own.
# "linear"    scores = ((T(x) − mean) / scale) @ coef + intercept with T = log1p(x / unit) on the
#             ``log_mask`` columns (``unit`` optional, as for "svc"); choose the argmax
#             (``choose: "max"``) or argmin ("min").
# "intervals" a threshold rule on one feature: variant ``labels[i]`` where i is the number of
#             ``thresholds`` (ascending) that x[feature] reaches (x >= t), as Futhark's
#             ``threshold <= size`` comparisons choose code versions.
EXTRA_KINDS = ("tree", "gbt", "linear", "intervals")


def transfer_origin(provenance: dict) -> dict:
    """The provenance of the ``tune_from_source`` model that ``provenance``'s model is, or was
    refined from (refits keep their start model's under ``base``); ``{}`` for any other."""
    p = provenance
    while isinstance(p, dict):
        if p.get("method") == "tune_from_source":
            return p
        p = p.get("base")
    return {}


def _inv_unit(p: dict, d: int):
    """1 / each column's optional ``unit`` (kinds kernel, svc, linear), ones without it."""
    import numpy as np
    return 1.0 / np.asarray(p.get("unit", np.ones(d)), dtype=np.float64)


def _tree_cache(t: dict) -> dict:
    import numpy as np
    return {"cl": np.asarray(t["children_left"], dtype=np.intp), "cr": np.asarray(t["children_right"], dtype=np.intp),
            "f": np.maximum(np.asarray(t["feature"], dtype=np.intp), 0),
            "thr": np.asarray(t["threshold"], dtype=np.float64), "v": np.asarray(t["value"], dtype=np.float64)}


def _extra_arrays(kind: str, p: dict) -> dict:
    """The NumPy arrays of a time learner's kind (the batch path, and ``nitro export-cpp``)."""
    import numpy as np
    if kind == "tree":
        return _tree_cache(p)
    if kind == "gbt":
        # all trees padded to one (n_trees, max_nodes) table, traversed together at dispatch
        trees = [_tree_cache(t) for t in p["trees"]]
        width = max(t["cl"].size for t in trees)

        def table(key, fill):
            out = np.full((len(trees), width), fill, dtype=trees[0][key].dtype)
            for i, t in enumerate(trees):
                out[i, :t[key].size] = t[key]
            return out
        return {"cl": table("cl", -1), "cr": table("cr", -1), "f": table("f", 0), "thr": table("thr", 0.0),
                "v": table("v", 0.0), "lr": float(p["learning_rate"]), "init": float(p["init"]),
                "codes": np.asarray(p["variant_codes"], dtype=np.float64), "f32": bool(p.get("x_float32", True)),
                "starts": np.asarray(variant_starts(p, len(trees), len(p["variant_codes"])), dtype=np.intp)}
    if kind == "linear":
        return {"log": np.asarray(p["log_mask"], dtype=bool), "inv_unit": _inv_unit(p, len(p["log_mask"])),
                "mean": np.asarray(p["mean"], dtype=np.float64),
                "scale": np.asarray(p["scale"], dtype=np.float64), "coef": np.asarray(p["coef"], dtype=np.float64),
                "b": np.asarray(p["intercept"], dtype=np.float64), "choose": p["choose"]}
    return {"feature": int(p["feature"]), "thr": np.asarray(p["thresholds"], dtype=np.float64), "labels": np.asarray(p["labels"], dtype=np.intp)}


def tree_leaves(t: dict, X32):
    """Leaf index of each row of ``X32`` (already rounded to float32) in tree arrays ``t``."""
    import numpy as np
    node = np.zeros(X32.shape[0], dtype=np.intp)
    rows = np.arange(X32.shape[0])
    while True:
        left = t["cl"][node]
        internal = left >= 0
        if not internal.any():
            return node
        go_left = X32[rows, t["f"][node]] <= t["thr"][node]
        node = np.where(internal, np.where(go_left, left, t["cr"][node]), node)


def _gbt_sum(a: dict, rows, trees: slice):
    """The boosted sum of ``rows`` over the trees ``trees`` of gbt arrays ``a``: all of them
    traversed together, level by level, and summed in scikit-learn's order (init, then each
    stage's scaled leaf value), so that choices match its ``predict`` exactly."""
    import numpy as np
    if a["f32"]:
        rows = rows.astype(np.float32).astype(np.float64)
    cl, cr, f, thr, v = (a[key][trees] for key in ("cl", "cr", "f", "thr", "v"))
    m, n_trees = rows.shape[0], cl.shape[0]
    tree = np.arange(n_trees)[None, :]
    row = np.arange(m)[:, None]
    node = np.zeros((m, n_trees), dtype=np.intp)
    while True:
        left = cl[tree, node]
        internal = left >= 0
        if not internal.any():
            break
        go_left = rows[row, f[tree, node]] <= thr[tree, node]
        node = np.where(internal, np.where(go_left, left, cr[tree, node]), node)
    terms = np.hstack([np.full((m, 1), a["init"]), a["lr"] * v[tree, node]])
    return np.add.accumulate(terms, axis=1)[:, -1]


def _scores_extra(kind: str, a: dict, X, k: int):
    """Scores (argmax = choice) of the time learners' kinds, see :meth:`SelectorModel.scores`."""
    import numpy as np
    if kind == "tree":
        X32 = X.astype(np.float32).astype(np.float64)
        return -a["v"][tree_leaves(a, X32)]
    if kind == "gbt":
        n = X.shape[0]
        if a["starts"].size:       # one booster per variant: each variant's rows through its own trees only
            out = np.empty((n, k))
            for j in range(k):
                rows = np.hstack([X, np.tile(a["codes"][j], (n, 1))])
                out[:, j] = _gbt_sum(a, rows, slice(a["starts"][j], a["starts"][j + 1]))
            return out
        rows = np.hstack([np.repeat(X, k, axis=0), np.tile(a["codes"], (n, 1))])
        return _gbt_sum(a, rows, slice(None)).reshape(n, k)
    if kind == "linear":
        Z = X * a["inv_unit"]
        Z[:, a["log"]] = np.log1p(np.maximum(Z[:, a["log"]], 0.0))
        scores = ((Z - a["mean"]) / a["scale"]) @ a["coef"] + a["b"]
        return scores if a["choose"] == "max" else -scores
    return np.eye(k)[a["labels"][np.searchsorted(a["thr"], X[:, a["feature"]], side="right")]]


def _compile(kind: str, a: dict, d: int, dev: list[float]):
    """The compiled evaluator (:mod:`nitro._selector`) of a model from its checked flat lists
    (:func:`nitro.model_params.flat_params`)."""
    from . import _selector
    if kind == "constant":
        return _selector.Constant(d, a["label"])
    if kind == "kernel":
        return _selector.Kernel(a["mean"], a["scale"], a["gamma"], a["centers"], a["weights"], a["offset"],
                                a["unit"])
    if kind == "svc":
        return _selector.Svc(d, dev, a["log_mask"], a["mean"], a["scale"], a["gamma"], a["sv"], a["n_support"],
                             a["dual_coef"], a["intercept"], a["unit"])
    if kind == "tree":
        return _selector.Tree(d, dev, a["cl"], a["cr"], a["f"], a["thr"], a["v"], True)
    if kind == "gbt":
        return _selector.Gbt(d, dev, a["n_trees"], a["cl"], a["cr"], a["f"], a["thr"], a["v"], a["lr"], a["init"],
                             a["codes"], a["n_variants"], a["f32"], a["starts"])
    if kind == "linear":
        return _selector.Linear(d, dev, a["log_mask"], a["mean"], a["scale"], a["coef"], a["intercept"],
                                a["choose_max"], a["unit"])
    return _selector.Intervals(d, dev, a["feature"], a["thresholds"], a["labels"])
