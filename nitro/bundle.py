"""Model bundles: one plain-data file (JSON, optionally gzipped; never pickle) that ships a
computation's selectors to users who never tune and never run Redis.

A bundle holds the models of the devices it was built for and what is needed on a device it
has never seen: each known device's datasheet product, a transfer block per device kind (the
Kronecker model of :mod:`nitro.transfer` in closed form: the expansion weights contributed by
each source, mixed by the device kernel of the new device's features) and a copy of the
datasheet's names and figures. :meth:`Bundle.model_for` picks this device's model:

1. ``exact``: the device id is one of the bundle's devices;
2. ``product``: the device's name matches, in the datasheet, the product of a bundle device;
3. ``transfer``: the device's features (given, the datasheet's, or queried here — measured
   only when allowed) mixed through the transfer block of its kind (features it lacks are
   taken from the nearest source, and said so);
4. ``default``: no model, the default variant runs.

Loading needs NumPy and the compiled evaluator only (no scikit-learn, pandas or server).
"""
from __future__ import annotations

import base64
import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .model import SelectorModel

FORMAT = "nitro-bundle"
VERSION = 1
PATHS = ("exact", "product", "transfer", "default")


def _tokens(name: str) -> tuple[str, ...]:
    from .devices.datasheet import _tokens as tokens   # the datasheet's own name matching
    return tokens(name)


def pack(array) -> dict:
    """A float array as plain data: little-endian float32 bytes in base64, with its shape
    (the transfer blocks' large arrays: a quarter of the size of JSON numbers, parsed at once)."""
    a = np.ascontiguousarray(array, dtype="<f4")
    return {"dtype": "float32", "shape": list(a.shape), "base64": base64.b64encode(a.tobytes()).decode()}


def unpack(data, what: str) -> np.ndarray:
    """The array of :func:`pack`, checked: dtype, shape against the byte count, finite values."""
    if not (isinstance(data, dict) and data.get("dtype") == "float32" and isinstance(data.get("base64"), str)
            and isinstance(data.get("shape"), list) and all(isinstance(n, int) and n >= 0 for n in data["shape"])):
        raise ValueError(f"{what} is not a packed float32 array")
    raw = base64.b64decode(data["base64"], validate=True)
    if len(raw) != 4 * math.prod(data["shape"]):
        raise ValueError(f"{what}: {len(raw)} bytes do not hold an array of shape {data['shape']}")
    a = np.frombuffer(raw, dtype="<f4").reshape(data["shape"]).astype(np.float64)
    if not np.isfinite(a).all():
        raise ValueError(f"{what} holds values that are not finite")
    return a


def _finite_dict(values, what: str) -> dict[str, float]:
    if not isinstance(values, dict):
        raise ValueError(f"{what} must be an object name -> number")
    out = {}
    for k, v in values.items():
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)):
            raise ValueError(f"{what}: {k!r} is {v!r}, not a finite number")
        out[str(k)] = float(v)
    return out


@dataclass
class Transfer:
    """Closed-form cross-device model over ``sources``: for a device with kernel row ``kd``
    against them, weights ``Σ_s kd[s] · weights[s]`` over the ``centers``, plus ``offset``."""
    sources: list[str]
    device_features: list[str]
    variants: list[str]
    input: dict                    # signed_log, mean, scale, gamma, centers (as a kernel model)
    weights: np.ndarray            # (n_sources, n_centers, n_variants)
    offset: list[float]
    dev_mean: np.ndarray           # over the sources, of signed-log features that vary
    dev_std: np.ndarray
    varies: np.ndarray             # bool mask over device_features
    spread2: float                 # largest squared distance of a source to its nearest

    @classmethod
    def from_dict(cls, d: dict) -> "Transfer":
        centers = unpack(d["input"]["centers"], "transfer centers")
        t = cls(sources=list(d["sources"]), device_features=list(d["device_features"]),
                variants=list(d["variants"]), input={**d["input"], "centers": centers},
                weights=unpack(d["weights"], "transfer weights"), offset=[float(v) for v in d["offset"]],
                dev_mean=np.asarray(d["dev_mean"], dtype=np.float64), dev_std=np.asarray(d["dev_std"], dtype=np.float64),
                varies=np.asarray(d["varies"], dtype=bool), spread2=float(d["spread2"]))
        m, f = len(t.sources), len(t.device_features)
        n, p = centers.shape if centers.ndim == 2 else (-1, -1)
        if not (t.weights.shape == (m, n, len(t.variants)) and len(t.input["mean"]) == len(t.input["scale"]) == p
                and math.isfinite(t.input["gamma"]) and len(t.offset) == len(t.variants)
                and t.varies.shape == (f,) and t.dev_mean.shape == t.dev_std.shape == (int(t.varies.sum()),)
                and np.isfinite(t.weights).all() and (t.dev_std > 0).all()):
            raise ValueError("transfer block has inconsistent shapes or values")
        return t

    def to_dict(self) -> dict:
        return {"sources": self.sources, "device_features": self.device_features, "variants": self.variants,
                "input": {**self.input, "centers": pack(self.input["centers"])}, "weights": pack(self.weights),
                "offset": self.offset,
                "dev_mean": self.dev_mean.tolist(), "dev_std": self.dev_std.tolist(),
                "varies": self.varies.tolist(), "spread2": self.spread2}

    def kernel_row(self, source_values: np.ndarray, target: np.ndarray) -> np.ndarray:
        """The device kernel row of ``target`` against the sources (raw feature values), as
        :func:`nitro.learn.kron.device_kernel` computes it: signed log, standardised over the
        sources, features constant over them left out, the row divided by its largest entry,
        and flattened when the target lies outside the sources."""
        if not self.varies.any():
            return np.ones(len(self.sources))
        log = lambda a: np.sign(a) * np.log1p(np.abs(a))           # noqa: E731
        Z = (log(source_values[:, self.varies]) - self.dev_mean) / self.dev_std
        z = (log(target[self.varies]) - self.dev_mean) / self.dev_std
        d2 = ((Z - z) ** 2).sum(axis=1)
        g = 1.0 / Z.shape[1]
        if d2.min() > self.spread2 > 0:
            g = g * self.spread2 / d2.min()
        return np.exp(-g * (d2 - d2.min()))

    def model(self, kd: np.ndarray, input_features: list[str], provenance: dict) -> SelectorModel:
        beta = np.einsum("s,snv->nv", kd, self.weights)
        model = SelectorModel(variants=self.variants, input_features=input_features, kind="kernel",
                              params={**self.input, "centers": self.input["centers"].tolist(), "weights": beta.tolist(),
                                      "offset": self.offset}, provenance=provenance)
        model._validate()
        return model


@dataclass
class Bundle:
    computation: str
    variants: list[str]
    input_features: list[str]
    default: str
    devices: dict[str, dict]                     # id -> {"model": SelectorModel, "product", "kind", "features"}
    transfer: dict[str, Transfer] = field(default_factory=dict)   # device kind (or "*") -> block
    datasheet: dict[str, dict] = field(default_factory=dict)      # product id -> {"kind", "names", "features"}
    provenance: dict = field(default_factory=dict)

    @classmethod
    def build(cls, computation: str, variants, input_features, default: str, models: dict,
              **parts) -> "Bundle":
        """A bundle of ``models`` (device id -> :class:`SelectorModel`); ``parts`` are the
        other fields (``transfer``, ``datasheet``, device ``info`` per id, ``provenance``)."""
        info = parts.pop("info", {})
        devices = {d: {"model": m, "product": info.get(d, {}).get("product"), "kind": info.get(d, {}).get("kind"),
                       "features": dict(info.get(d, {}).get("features", {}))} for d, m in models.items()}
        bundle = cls(computation, list(variants), list(input_features), default, devices, **parts)
        bundle.validate()
        return bundle

    # -- validation and I/O ------------------------------------------------------------------
    def validate(self) -> None:
        """Raise ``ValueError`` naming the first inconsistency."""
        if self.default not in self.variants:
            raise ValueError(f"bundle default {self.default!r} is not one of its variants {self.variants}")
        for device, entry in self.devices.items():
            m = entry["model"]
            if m.input_features != self.input_features or set(m.variants) - set(self.variants):
                raise ValueError(f"bundle model of {device!r} does not match the computation's variants and features")
        for kind, t in self.transfer.items():
            unknown = [s for s in t.sources if s not in self.devices]
            if unknown or set(t.variants) - set(self.variants):
                raise ValueError(f"transfer block {kind!r} names unknown sources {unknown} or variants")
            missing = [s for s in t.sources if set(t.device_features) - set(self.devices[s]["features"])]
            if missing:
                raise ValueError(f"transfer block {kind!r}: sources {missing} lack some of {t.device_features}")

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "computation": self.computation, "variants": self.variants,
                "input_features": self.input_features, "default": self.default,
                "devices": {d: {**e, "model": e["model"].to_dict()} for d, e in self.devices.items()},
                "transfer": {k: t.to_dict() for k, t in self.transfer.items()},
                "datasheet": self.datasheet, "provenance": self.provenance}

    @classmethod
    def from_dict(cls, data) -> "Bundle":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a nitro model bundle (no \"format\": \"nitro-bundle\")")
        if data.get("version") != VERSION:
            raise ValueError(f"unsupported bundle version {data.get('version')!r} (this nitro reads {VERSION})")
        try:
            devices = {}
            for d, e in dict(data["devices"]).items():
                devices[str(d)] = {"model": SelectorModel.from_dict(e["model"]), "product": e.get("product"),
                                   "kind": e.get("kind"), "features": _finite_dict(e.get("features", {}), f"features of {d!r}")}
            bundle = cls(computation=str(data["computation"]), variants=[str(v) for v in data["variants"]],
                         input_features=[str(f) for f in data["input_features"]], default=str(data["default"]),
                         devices=devices,
                         transfer={str(k): Transfer.from_dict(t) for k, t in dict(data.get("transfer", {})).items()},
                         datasheet=dict(data.get("datasheet", {})), provenance=dict(data.get("provenance", {})))
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise ValueError(f"malformed bundle: {exc!r}") from None
        bundle.validate()
        return bundle

    def save(self, path) -> Path:
        """Write the bundle as JSON (gzipped when ``path`` ends in ``.gz``)."""
        path = Path(path)
        text = json.dumps(self.to_dict(), allow_nan=False, separators=(",", ":"))
        if path.suffix == ".gz":
            path.write_bytes(gzip.compress(text.encode(), mtime=0))
        else:
            path.write_text(text)
        return path

    @classmethod
    def load(cls, path) -> "Bundle":
        """Read and validate a bundle file; errors name the file and the problem."""
        path = Path(path)
        try:
            raw = path.read_bytes()
            data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        except FileNotFoundError:
            raise FileNotFoundError(f"no bundle file {path}") from None
        except (OSError, ValueError) as exc:
            raise ValueError(f"bundle {path} is not readable JSON: {exc}") from None
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"bundle {path}: {exc}") from None

    # -- choosing this device's model ----------------------------------------------------------
    def product_of(self, name: str) -> str | None:
        """The datasheet product a device name (id, name, alias or reported name) matches,
        longest match first, as :func:`nitro.devices.datasheet.lookup` decides."""
        query = _tokens(name)
        best, best_len = None, 0
        for product, row in self.datasheet.items():
            for candidate in row.get("names", []):
                words = _tokens(candidate)
                n = len(words)
                if n > best_len and any(query[i:i + n] == words for i in range(len(query) - n + 1)):
                    best, best_len = product, n
        return best

    def model_for(self, device: str | None = None, device_features: dict | None = None,
                  kind: str | None = None, query: bool = True, measure: bool = False) -> tuple[SelectorModel | None, dict]:
        """This device's model and how it was found: ``(model or None, {"path", "device", ...})``.

        ``device``: an id or a reported name (default: this machine's CPU). ``device_features``:
        its features (name -> number), else the datasheet's figures of its product, else (with
        ``query``) those :func:`nitro.devices.describe` reports here, microbenchmarks only with
        ``measure``. ``kind`` (``cpu``/``gpu``) picks the transfer block, else the datasheet's."""
        if device is None:
            from .devices import current_device_id
            device = current_device_id()
        if device in self.devices:
            return self.devices[device]["model"], {"path": "exact", "device": device}
        product = self.product_of(device) if self.datasheet else None
        for known, entry in self.devices.items():
            if product is not None and entry.get("product") == product:
                return entry["model"], {"path": "product", "device": device, "product": product, "as": known}
        info = {"device": device, "product": product}
        features, source = self._features(device, product, device_features, query, measure)
        kind = kind or (self.datasheet.get(product, {}).get("kind") if product else None)
        block = self.transfer.get(kind) if kind in self.transfer else self.transfer.get("*")
        if block is None and len(self.transfer) == 1:
            block = next(iter(self.transfer.values()))
        if block is not None and features:
            model, details = self._transfer(block, features, device)
            if model is not None:
                return model, {"path": "transfer", **info, "features_from": source,
                               "block": next(k for k, b in self.transfer.items() if b is block), **details}
        reason = "no transfer block" if block is None else "no device features"
        return None, {"path": "default", **info, "variant": self.default, "reason": reason}

    def _features(self, device, product, given, query, measure) -> tuple[dict, str | None]:
        if given:
            return _finite_dict(dict(given), "device_features"), "given"
        if product is not None and self.datasheet.get(product, {}).get("features"):
            return dict(self.datasheet[product]["features"]), "datasheet"
        if query:
            from .devices import cpu_device_id, describe, describe_cpu
            try:
                if device in ("cpu", cpu_device_id()) and not measure:
                    record = describe_cpu()        # what the OS says (describe() adds the datasheet: pandas)
                else:
                    record = describe(device, measure=measure)
            except (ValueError, OSError, RuntimeError):
                return {}, None
            values = {k: r["value"] for k, r in record.items() if isinstance(r, dict) and r.get("value") is not None}
            return values, "measured" if measure else "queried"
        return {}, None

    def _transfer(self, block: Transfer, features: dict, device: str):
        S = np.array([[self.devices[s]["features"][f] for f in block.device_features] for s in block.sources])
        have = [i for i, f in enumerate(block.device_features) if f in features]
        if not have:
            return None, {}
        target = np.array([float(features.get(f, np.nan)) for f in block.device_features])
        imputed = {}
        if len(have) < len(block.device_features):   # lacking features: those of the nearest source
            log = np.log1p(np.abs(S[:, have]))
            spread = log.std(axis=0)
            spread[spread == 0] = 1.0
            nearest = int((((log - np.log1p(np.abs(target[have]))) / spread) ** 2).sum(axis=1).argmin())
            for i, f in enumerate(block.device_features):
                if i not in have:
                    target[i] = S[nearest, i]
                    imputed[f] = block.sources[nearest]
        kd = block.kernel_row(S, target)
        weights = dict(zip(block.sources, (kd / kd.sum()).round(4).tolist()))
        provenance = {"method": "bundle transfer", "target": device, "source_weights": weights, "imputed": imputed}
        return block.model(kd, self.input_features, provenance), {"source_weights": weights, "imputed": imputed}


def load_bundle(path) -> Bundle:
    """Read and validate a bundle file (``cv.use_bundle(bundle)`` then picks this device's model,
    see :meth:`Bundle.model_for`)."""
    return Bundle.load(path)
