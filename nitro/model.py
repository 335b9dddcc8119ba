"""Trained selectors as plain data: exported from a fitted learner, stored as JSON,
validated on load, and evaluated with NumPy alone (no scikit-learn at dispatch time).

A model maps an input-feature vector (plus, for a transferred model, the target's device
features, held as constants) to a variant name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

FORMAT = 1
KINDS = ("constant", "svc", "kernel")


def _strings(items, empty_ok=False) -> list[str]:
    if not isinstance(items, list) or not (items or empty_ok) or not all(isinstance(i, str) for i in items):
        raise ValueError(f"expected a list of names, got {items!r}")
    return items


@dataclass
class SelectorModel:
    variants: list[str]                 # class labels, in the learner's order
    input_features: list[str]
    kind: str                           # "constant" | "svc" | "kernel"
    params: dict = field(default_factory=dict)
    device_features: dict[str, float] = field(default_factory=dict)  # appended constants
    provenance: dict = field(default_factory=dict)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_estimator(cls, est, input_features, device_features=None, provenance=None):
        """Export a fitted :class:`nitro.learn.SVMSelector`."""
        classes = [str(c) for c in est.classes_]
        common = dict(variants=classes, input_features=list(input_features),
                      device_features=dict(device_features or {}), provenance=dict(provenance or {}))
        if getattr(est, "pipeline_", None) is None:
            return cls(kind="constant", params={"label": 0}, **common)
        log, scaler, svc = (est.pipeline_[i] for i in range(3))
        params = {
            "log_mask": log.log_mask_.tolist(),
            "mean": scaler.mean_.tolist(), "scale": scaler.scale_.tolist(),
            "gamma": float(svc._gamma),
            "support_vectors": svc.support_vectors_.tolist(),
            "n_support": svc.n_support_.tolist(),
            "dual_coef": svc._dual_coef_.tolist(),
            "intercept": svc._intercept_.tolist(),
        }
        return cls(kind="svc", params=params, **common)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "kind": self.kind, "variants": self.variants,
                "input_features": self.input_features, "device_features": self.device_features,
                "params": self.params, "provenance": self.provenance}

    @classmethod
    def from_dict(cls, data) -> "SelectorModel":
        """Load and validate a model read from the store."""
        if not isinstance(data, dict):
            raise ValueError("a model must be a JSON object")
        if data.get("format") != FORMAT:
            raise ValueError(f"unsupported model format {data.get('format')!r} (this nitro reads {FORMAT})")
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown model kind {kind!r}")
        try:
            model = cls(variants=_strings(data["variants"]), input_features=_strings(data["input_features"], empty_ok=True),
                        kind=kind, params=dict(data["params"]),
                        device_features={str(k): float(v) for k, v in dict(data.get("device_features", {})).items()},
                        provenance=dict(data.get("provenance", {})))
            model._validate()
        except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
            raise ValueError(f"malformed {kind} model: {exc!r}") from None
        return model

    def _validate(self):
        p = self.params
        if self.kind == "constant":
            if not (isinstance(p.get("label"), int) and 0 <= p["label"] < len(self.variants)):
                raise ValueError("constant model with an invalid label")
            return
        if self.kind == "kernel":
            d, k = len(self.input_features), len(self.variants)
            C = np.asarray(p["centers"], dtype=np.float64)
            W = np.asarray(p["weights"], dtype=np.float64)
            if not (C.ndim == 2 and C.shape[1] == d and W.shape == (C.shape[0], k)
                    and len(p["offset"]) == k and len(p["mean"]) == d and len(p["scale"]) == d):
                raise ValueError("kernel model parameters have inconsistent shapes")
            if not all(np.isfinite(np.asarray(p[key], dtype=float)).all()
                       for key in ("centers", "weights", "offset", "mean", "scale", "gamma")):
                raise ValueError("kernel model parameters are not all finite")
            return
        d = len(self.input_features) + len(self.device_features)
        sv = np.asarray(p["support_vectors"], dtype=np.float64)
        k = len(self.variants)
        ok = (sv.ndim == 2 and sv.shape[1] == d and len(p["mean"]) == d and len(p["scale"]) == d
              and len(p["log_mask"]) == d and len(p["n_support"]) == k
              and sum(p["n_support"]) == sv.shape[0]
              and np.asarray(p["dual_coef"]).shape == (k - 1, sv.shape[0])
              and len(p["intercept"]) == k * (k - 1) // 2 and math.isfinite(p["gamma"]))
        if not ok:
            raise ValueError("svc model parameters have inconsistent shapes")
        if not all(np.isfinite(np.asarray(p[key], dtype=float)).all()
                   for key in ("support_vectors", "dual_coef", "intercept", "mean", "scale")):
            raise ValueError("svc model parameters are not all finite")

    # -- prediction --------------------------------------------------------------------------
    def __post_init__(self):
        self._cache = None
        self._compiled = None

    def compiled(self):
        """The model as a compiled evaluator (``nitro._selector``): ``predict_one(values)``
        gives the variant index for one feature list in about a microsecond, or -1 when the
        values are not ``len(input_features)`` finite numbers; ``predict_batch(X)`` for many."""
        if self._compiled is None:
            from . import _selector
            p, d = self.params, len(self.input_features)
            if self.kind == "constant":
                self._compiled = _selector.Constant(d, p["label"])
            elif self.kind == "kernel":
                a = self._arrays()
                self._compiled = _selector.Kernel(a["mean"], a["scale"], float(p["gamma"]), a["centers"],
                                                  a["W"], a["b"])
            else:
                a, k = self._arrays(), len(self.variants)
                pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
                self._compiled = _selector.Svc(d, a["dev"], a["log"].tolist(), a["mean"], a["scale"],
                                               float(p["gamma"]), a["sv"], a["Wt"].T.copy(), a["b"], pairs, k)
        return self._compiled

    def _arrays(self):
        if self._cache is None:
            p = self.params
            if self.kind == "constant":
                self._cache = {}
            elif self.kind == "kernel":
                C = np.asarray(p["centers"], dtype=np.float64)
                self._cache = {"mean": np.asarray(p["mean"]), "scale": np.asarray(p["scale"]),
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
                    "log": np.asarray(p["log_mask"], dtype=bool),
                    "mean": np.asarray(p["mean"]), "scale": np.asarray(p["scale"]),
                    "sv": sv, "sv_sq": (sv ** 2).sum(axis=1), "Wt": W.T.copy(),
                    "b": np.asarray(p["intercept"]), "win_i": win_i, "win_j": win_j,
                    "dev": np.asarray(list(self.device_features.values()), dtype=np.float64),
                }
        return self._cache

    def predict_index(self, X) -> np.ndarray:
        """Index into :attr:`variants` for each row of input features ``X`` (n, d_in)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if self.kind == "constant":
            return np.full(X.shape[0], self.params["label"])
        a = self._arrays()
        if self.kind == "kernel":
            Z = (np.sign(X) * np.log1p(np.abs(X)) - a["mean"]) / a["scale"]
            d2 = (Z * Z).sum(axis=1)[:, None] + a["c_sq"][None, :] - 2.0 * (Z @ a["centers"].T)
            scores = np.exp(-self.params["gamma"] * np.maximum(d2, 0.0)) @ a["W"] + a["b"]
            return scores.argmax(axis=1)
        if a["dev"].size:
            X = np.hstack([X, np.broadcast_to(a["dev"], (X.shape[0], a["dev"].size))])
        X = X.copy()
        X[:, a["log"]] = np.log1p(np.maximum(X[:, a["log"]], 0.0))
        X = (X - a["mean"]) / a["scale"]
        # squared distances as libsvm computes them: x.x + sv.sv - 2 x.sv
        d2 = (X * X).sum(axis=1)[:, None] + a["sv_sq"][None, :] - 2.0 * (X @ a["sv"].T)
        dec = np.exp(-self.params["gamma"] * d2) @ a["Wt"] + a["b"]
        # libsvm's one-versus-one vote: a positive decision votes for the pair's first class;
        # argmax breaks ties towards the lower class index, as libsvm does
        pos = dec > 0
        votes = pos @ a["win_i"] + (~pos) @ a["win_j"]
        return votes.argmax(axis=1)

    def predict(self, X) -> list[str]:
        return [self.variants[i] for i in self.predict_index(X)]
