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

Loading a bundle and choosing from it need neither NumPy nor the tuning side (scikit-learn,
pandas, a server): the file is checked and the transfer blocks evaluated in plain Python.
Loading reads the bundle's outline; a device's model and a transfer block's arrays are read and
checked when first used (:meth:`Bundle.model`, :meth:`Bundle.model_for`), so that loading does not
grow with the devices a bundle ships; :meth:`Bundle.check` reads every part.
"""
from __future__ import annotations

import json
import math
import os
import sys
from array import array

from .model import SelectorModel
from .model_params import PARAM_KEYS, flags, known_keys, known_version, real, vector

FORMAT = "nitro-bundle"
#: The bundle version written. 2: its models are of model format 2 (see :data:`nitro.model.FORMAT`)
#: and readers refuse fields they do not know; readers of version 1 accepted any and dropped
#: them (a model's ``unit``), choosing differently. 3: each device's model is JSON text inside the
#: bundle, parsed only for the device that uses it (as objects, the models of 9 SpMV devices took
#: 327 ms of a 3.2 MB bundle's 347 ms of JSON parsing). Every version in :data:`READS` loads.
VERSION = 3
READS = (1, 2, 3)
FIELDS = ("format", "version", "computation", "variants", "input_features", "default", "devices", "transfer",
          "datasheet", "provenance")
DEVICE_FIELDS = ("model", "product", "kind", "features")
TRANSFER_FIELDS = ("sources", "device_features", "variants", "input", "weights", "offset", "dev_mean", "dev_std",
                   "varies", "spread2")


def _tokens(name: str) -> tuple[str, ...]:
    from .devices.datasheet import _tokens as tokens   # the datasheet's own name matching
    return tokens(name)


def _flatten(values) -> tuple[list[float], list[int]]:
    """A (nested) list or NumPy array as its numbers, row-major, and its shape."""
    if hasattr(values, "shape") and hasattr(values, "ravel"):
        return [float(v) for v in values.ravel().tolist()], list(values.shape)
    if not isinstance(values, (list, tuple)):
        return [float(values)], []
    if not values or not isinstance(values[0], (list, tuple)):
        return [float(v) for v in values], [len(values)]
    parts = [_flatten(v) for v in values]
    if any(shape != parts[0][1] for _, shape in parts):
        raise ValueError("cannot pack a ragged array")
    return [v for flat, _ in parts for v in flat], [len(values), *parts[0][1]]


def _nested(flat: list[float], shape: list[int]):
    """The nested lists of ``shape`` holding ``flat`` (row-major)."""
    if len(shape) <= 1:
        return flat if shape else flat[0]
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def pack(values) -> dict:
    """An array (nested lists or NumPy) as plain data: little-endian float32 bytes in base64,
    with its shape (the transfer blocks' large arrays: a quarter of the size of JSON numbers,
    parsed at once)."""
    import base64
    flat, shape = _flatten(values)
    raw = array("f", flat)
    if sys.byteorder == "big":
        raw.byteswap()
    return {"dtype": "float32", "shape": shape, "base64": base64.b64encode(raw.tobytes()).decode()}


def packed_shape(data, what: str) -> list[int]:
    """The shape of a :func:`pack` result, its form checked (dtype, shape, base64 text) without
    decoding its bytes."""
    if not (isinstance(data, dict) and data.get("dtype") == "float32" and isinstance(data.get("base64"), str)
            and isinstance(data.get("shape"), list) and all(isinstance(n, int) and n >= 0 for n in data["shape"])):
        raise ValueError(f"{what} is not a packed float32 array")
    return data["shape"]


def unpack(data, what: str):
    """The array of :func:`pack` as nested lists of floats, checked: dtype, shape against the
    byte count, finite values."""
    import base64
    packed_shape(data, what)
    try:
        raw = base64.b64decode(data["base64"], validate=True)
    except ValueError as exc:            # binascii.Error
        raise ValueError(f"{what} is not valid base64 ({exc})") from None
    if len(raw) != 4 * math.prod(data["shape"]):
        raise ValueError(f"{what}: {len(raw)} bytes do not hold an array of shape {data['shape']}")
    values = array("f")
    values.frombytes(raw)
    if sys.byteorder == "big":
        values.byteswap()
    if not all(map(math.isfinite, values)):
        raise ValueError(f"{what} holds values that are not finite")
    return _nested(values.tolist(), data["shape"])


def _gunzip(raw: bytes) -> bytes:
    """What ``gzip.decompress`` gives (every member, zero padding allowed), with zlib alone."""
    import zlib
    out = []
    while raw:
        stream = zlib.decompressobj(wbits=31)
        try:
            out.append(stream.decompress(raw))
        except zlib.error as exc:
            raise ValueError(f"bad gzip data: {exc}") from None
        if not stream.eof:
            raise ValueError("compressed data end early")
        raw = stream.unused_data.lstrip(b"\0")
    return b"".join(out)


def _finite_dict(values, what: str) -> dict[str, float]:
    if not isinstance(values, dict):
        raise ValueError(f"{what} must be an object name -> number")
    out = {}
    for k, v in values.items():
        try:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        except OverflowError:          # an int beyond a double's range
            ok = False
        if not ok:
            raise ValueError(f"{what}: {k!r} is {v!r:.40}, not a finite number")
        out[str(k)] = float(v)
    return out


def _datasheet_rows(rows) -> dict[str, dict]:
    """A bundle's datasheet rows, checked: product -> {"kind", "names" (text), "features"}."""
    if not isinstance(rows, dict):
        raise ValueError("datasheet must be an object product -> row")
    out = {}
    for product, row in rows.items():
        if not isinstance(row, dict):
            raise ValueError(f"datasheet row {product!r} must be an object with kind, names and features")
        known_keys(row, ("kind", "names", "features"), f"datasheet row {product!r}: field")
        names, kind = row.get("names", []), row.get("kind")
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise ValueError(f"datasheet row {product!r}: names must be a list of text, got {names!r}")
        if not (kind is None or isinstance(kind, str)):
            raise ValueError(f"datasheet row {product!r}: kind must be text, got {kind!r}")
        out[str(product)] = {**row, "names": names, "kind": kind,
                             "features": _finite_dict(row.get("features", {}), f"datasheet row {product!r} features")}
    return out


def _block(kind: str, data) -> "Transfer":
    """A transfer block read from a bundle; errors name the block."""
    try:
        return Transfer.from_dict(data)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        text = str(exc) if isinstance(exc, ValueError) else f"malformed ({exc!r})"
        raise ValueError(f"transfer block {kind!r}: {text}") from None


def _signed_log(v: float) -> float:
    return math.copysign(math.log1p(abs(v)), v)


def _array(values) -> list | dict:
    """An array as nested lists; a packed one (:func:`pack`, as loaded) kept packed until read."""
    if isinstance(values, dict):
        return values
    return values.tolist() if hasattr(values, "tolist") else list(values)


class Transfer:
    """Closed-form cross-device model over ``sources``: for a device with kernel row ``kd``
    against them, weights ``Σ_s kd[s] · weights[s]`` over the ``centers``, plus ``offset``.

    ``input``: signed_log, mean, scale, gamma, centers (n_centers × n_inputs), as a kernel
    model's; ``weights``: (n_sources × n_centers × n_variants); ``dev_mean``, ``dev_std``: over
    the sources, of the signed-log device features that vary (``varies``: mask over
    ``device_features``); ``spread2``: the largest squared distance of a source to its nearest.
    Arrays may be given as NumPy arrays (when built) and are kept as lists; a loaded block keeps
    ``centers`` and ``weights`` packed until :meth:`read` (a new device's transfer path needs them,
    a known device's model does not)."""

    def __init__(self, sources, device_features, variants, input: dict, weights, offset, dev_mean, dev_std,
                 varies, spread2: float):
        self.sources, self.device_features, self.variants = list(sources), list(device_features), list(variants)
        self.input = {**input, "centers": _array(input["centers"])}
        self.weights = _array(weights)
        self.offset = vector(offset)
        self.dev_mean, self.dev_std = vector(dev_mean), vector(dev_std)
        self.varies = flags(varies)
        self.spread2 = real(spread2)

    @classmethod
    def from_dict(cls, d: dict) -> "Transfer":
        known_keys(d, TRANSFER_FIELDS, "field")
        known_keys(d["input"], PARAM_KEYS["kernel"] - {"weights", "offset"}, "input field")
        shape = packed_shape(d["input"]["centers"], "transfer centers")
        weights_shape = packed_shape(d["weights"], "transfer weights")
        t = cls(sources=d["sources"], device_features=d["device_features"], variants=d["variants"],
                input=d["input"], weights=d["weights"], offset=d["offset"],
                dev_mean=d["dev_mean"], dev_std=d["dev_std"], varies=d["varies"], spread2=d["spread2"])
        m, f, k = len(t.sources), len(t.device_features), len(t.variants)
        n, p = shape if len(shape) == 2 else (-1, -1)
        for what, names in (("sources", t.sources), ("device features", t.device_features), ("variants", t.variants)):
            if not all(isinstance(x, str) and x for x in names) or len(set(names)) != len(names):
                raise ValueError(f"its {what} must be distinct names, got {names}")
        mean, scale = vector(t.input["mean"]), vector(t.input["scale"])
        for what, values in (("offset", t.offset), ("input mean", mean), ("input scale", scale),
                             ("gamma", [t.input["gamma"]]), ("spread2", [t.spread2])):
            if not all(map(math.isfinite, values)):
                raise ValueError(f"its {what} holds values that are not finite")
        if not (weights_shape == [m, n, k] and len(mean) == len(scale) == p and all(v > 0 for v in scale)
                and len(t.offset) == k and len(t.varies) == f and len(t.dev_mean) == len(t.dev_std) == sum(t.varies)
                and all(s > 0 for s in t.dev_std) and all(map(math.isfinite, t.dev_mean + t.dev_std))
                and t.spread2 >= 0 and t.input["gamma"] > 0):
            raise ValueError("it has inconsistent shapes or values")
        return t

    def read(self) -> "Transfer":
        """The block with its packed arrays unpacked and checked (bytes against shapes, finite
        values; ``ValueError`` naming the array), once."""
        if isinstance(self.input["centers"], dict):
            self.input["centers"] = unpack(self.input["centers"], "transfer centers")
        if isinstance(self.weights, dict):
            self.weights = unpack(self.weights, "transfer weights")
        return self

    def to_dict(self) -> dict:
        self.read()
        return {"sources": self.sources, "device_features": self.device_features, "variants": self.variants,
                "input": {**self.input, "centers": pack(self.input["centers"])}, "weights": pack(self.weights),
                "offset": self.offset, "dev_mean": self.dev_mean, "dev_std": self.dev_std,
                "varies": self.varies, "spread2": self.spread2}

    def kernel_row(self, source_values: list[list[float]], target: list[float]) -> list[float]:
        """The device kernel row of ``target`` against the sources (raw feature values), as
        :func:`nitro.learn.kron.device_kernel` computes it: signed log, standardised over the
        sources, features constant over them left out, the row divided by its largest entry,
        and flattened when the target lies outside the sources."""
        d2 = self._distances(source_values, target)
        if d2 is None:
            return [1.0] * len(self.sources)
        nearest = min(d2)
        g = 1.0 / sum(self.varies)
        if self._beyond(d2):
            g = g * self.spread2 / nearest
        return [math.exp(-g * (v - nearest)) for v in d2]

    def outside(self, source_values: list[list[float]], target: list[float]) -> bool:
        """Whether ``target`` is farther from its nearest source than any source is from its own
        (:func:`nitro.learn.kron.source_distances`): what the sources show, not a figure to trust."""
        return self._beyond(self._distances(source_values, target))

    def _beyond(self, d2: list[float] | None) -> bool:
        return d2 is not None and min(d2) > self.spread2 > 0

    def _distances(self, source_values: list[list[float]], target: list[float]) -> list[float] | None:
        """Squared distances of ``target`` to each source in standardised signed-log units (None
        where no feature varies over the sources)."""
        cols = [i for i, v in enumerate(self.varies) if v]
        if not cols:
            return None
        stats = list(zip(cols, self.dev_mean, self.dev_std))
        z = [(_signed_log(target[i]) - mu) / sd for i, mu, sd in stats]
        return [sum(((_signed_log(row[i]) - mu) / sd - zj) ** 2 for (i, mu, sd), zj in zip(stats, z))
                for row in source_values]

    def model(self, kd: list[float], input_features: list[str], provenance: dict) -> SelectorModel:
        self.read()
        k = len(self.variants)
        beta = [[0.0] * k for _ in self.input["centers"]]
        for w, source in zip(kd, self.weights):       # Σ_s kd[s] · weights[s], in source order
            beta = [[b + w * x for b, x in zip(row, source_row)] for row, source_row in zip(beta, source)]
        model = SelectorModel(variants=self.variants, input_features=input_features, kind="kernel",
                              params={**self.input, "weights": beta, "offset": self.offset}, provenance=provenance)
        model._validate()
        return model


class Bundle:
    """A computation's models for known devices (``devices``: id -> {"model", "product", "kind",
    "features"}), its transfer blocks per device kind (or ``"*"``) and datasheet rows (product
    id -> {"kind", "names", "features"}). A loaded bundle's ``"model"`` is the file's until
    :meth:`model` reads it: ask that, not ``devices``, for a device's model."""

    def __init__(self, computation: str, variants: list[str], input_features: list[str], default: str,
                 devices: dict[str, dict], transfer: dict[str, Transfer] | None = None,
                 datasheet: dict[str, dict] | None = None, provenance: dict | None = None):
        self.computation, self.variants, self.input_features = computation, variants, input_features
        self.default, self.devices = default, devices
        self.transfer = {} if transfer is None else transfer
        self.datasheet = {} if datasheet is None else datasheet
        self.provenance = {} if provenance is None else provenance
        self.origin = None          # the file it was loaded from, named in the errors of parts read later

    def __repr__(self):
        return (f"Bundle({self.computation!r}, variants={self.variants}, devices={sorted(self.devices)}, "
                f"transfer={sorted(self.transfer)})")

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
        """Raise ``ValueError`` naming the first inconsistency (a model still unread is checked by
        :meth:`model`)."""
        if self.default not in self.variants:
            raise ValueError(f"bundle default {self.default!r} is not one of its variants {self.variants}")
        for device, entry in self.devices.items():
            if isinstance(entry["model"], SelectorModel):
                self._matches(entry["model"], f"bundle model of {device!r}")
        for kind, t in self.transfer.items():
            unknown = [s for s in t.sources if s not in self.devices]
            if unknown or set(t.variants) - set(self.variants):
                raise ValueError(f"transfer block {kind!r} names unknown sources {unknown} or variants")
            missing = [s for s in t.sources if set(t.device_features) - set(self.devices[s]["features"])]
            if missing:
                raise ValueError(f"transfer block {kind!r}: sources {missing} lack some of {t.device_features}")

    def _matches(self, model: SelectorModel, what: str) -> SelectorModel:
        if model.input_features != self.input_features or set(model.variants) - set(self.variants):
            raise ValueError(f"{what} does not match the computation's variants and features")
        return model

    def model(self, device: str) -> SelectorModel:
        """The model of the bundle's device ``device`` (``KeyError`` for another), read and checked
        on first use; a malformed one is a ``ValueError`` naming the file and the device."""
        entry = self.devices[device]
        if not isinstance(entry["model"], SelectorModel):
            raw = entry["model"]                # version 3: JSON text; 1 and 2: an object
            entry["model"] = self._read_part(f"the model of device {device!r}", lambda: self._matches(
                SelectorModel.from_dict(json.loads(raw) if isinstance(raw, str) else raw), "it"))
        return entry["model"]

    def block(self, kind: str) -> "Transfer":
        """The transfer block ``kind`` with its arrays read and checked (on first use; a malformed
        one is a ``ValueError`` naming the file and the block)."""
        return self._read_part(f"transfer block {kind!r}", self.transfer[kind].read)

    def check(self) -> "Bundle":
        """Read every device's model and transfer block now (loading leaves them to first use);
        ``ValueError`` naming the first malformed part: for tools that vouch for a whole file."""
        for device in self.devices:
            self.model(device)
        for kind in self.transfer:
            self.block(kind)
        return self

    def _read_part(self, what: str, read):
        try:
            return read()
        except ValueError as exc:
            where = f"bundle {self.origin}: " if self.origin else ""
            raise ValueError(f"{where}{what}: {exc}") from None

    def to_dict(self) -> dict:
        def text(model: SelectorModel) -> str:
            return json.dumps(model.to_dict(), allow_nan=False, separators=(",", ":"))
        return {"format": FORMAT, "version": VERSION, "computation": self.computation, "variants": self.variants,
                "input_features": self.input_features, "default": self.default,
                "devices": {d: {**e, "model": text(self.model(d))} for d, e in self.devices.items()},
                "transfer": {k: t.to_dict() for k, t in self.transfer.items()},
                "datasheet": self.datasheet, "provenance": self.provenance}

    @classmethod
    def from_dict(cls, data) -> "Bundle":
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a nitro model bundle (no \"format\": \"nitro-bundle\")")
        known_version(data.get("version"), READS, VERSION, "bundle version")
        known_keys(data, FIELDS, "bundle field")
        for key, kind in (("computation", str), ("default", str), ("variants", list), ("input_features", list),
                          ("devices", dict)):
            if key not in data:
                raise ValueError(f"malformed bundle: it has no {key!r}")
            if not isinstance(data.get(key), kind):
                raise ValueError(f"malformed bundle: {key!r} must be {'text' if kind is str else 'a ' + kind.__name__}, "
                                 f"got {type(data.get(key)).__name__}")
        for key in ("variants", "input_features"):
            names = data[key]
            if not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(names):
                raise ValueError(f"malformed bundle: {key!r} must be distinct names, got {names}")
        try:
            devices = {}
            for d, e in data["devices"].items():
                if not isinstance(e, dict):
                    raise ValueError(f"device {d!r} must be an object, got {type(e).__name__}")
                known_keys(e, DEVICE_FIELDS, f"device {d!r}: field")
                model = e.get("model")
                if not isinstance(model, (dict, str)):
                    raise ValueError(f"device {d!r} has no 'model'" if model is None else
                                     f"the model of device {d!r} must be an object or JSON text, got "
                                     f"{type(model).__name__}")
                product, kind = e.get("product"), e.get("kind")
                if not all(v is None or isinstance(v, str) for v in (product, kind)):
                    raise ValueError(f"device {d!r}: product and kind must be text or null")
                devices[str(d)] = {"model": model, "product": product, "kind": kind,
                                   "features": _finite_dict(e.get("features", {}), f"features of {d!r}")}
            bundle = cls(computation=data["computation"], variants=list(data["variants"]),
                         input_features=list(data["input_features"]), default=data["default"],
                         devices=devices,
                         transfer={str(k): _block(k, t) for k, t in dict(data.get("transfer", {})).items()},
                         datasheet=_datasheet_rows(data.get("datasheet", {})),
                         provenance=dict(data.get("provenance", {})))
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise ValueError(f"malformed bundle: {exc!r}") from None
        bundle.validate()
        return bundle

    def save(self, path):
        """Write the bundle as JSON (gzipped when ``path`` ends in ``.gz``); returns its Path."""
        import gzip
        from pathlib import Path
        path = Path(_file_path(path, "saved to"))
        check_output_folder(path)
        text = json.dumps(self.to_dict(), allow_nan=False, separators=(",", ":"))
        if path.suffix.lower() == ".gz":
            path.write_bytes(gzip.compress(text.encode(), mtime=0))
        else:
            path.write_text(text)
        return path

    @classmethod
    def load(cls, path) -> "Bundle":
        """Read a bundle file (a path, or a package resource such as
        ``importlib.resources.files("mylib") / "data/x.json"``, which may live in a zip) and check
        its outline, its device models and transfer arrays when first used (:meth:`check`: all
        now); errors name the file and the problem."""
        # a Traversable (importlib.resources): a file inside a zip has no path, but reads
        resource = not isinstance(path, (str, os.PathLike)) and callable(getattr(path, "read_bytes", None))
        path = path if resource else _file_path(path, "loaded from")
        try:
            raw = path.read_bytes() if resource else _read(path)
            data = json.loads(_gunzip(raw) if raw[:2] == b"\x1f\x8b" else raw)
        except FileNotFoundError:
            raise FileNotFoundError(f"no bundle file {path}") from None
        except IsADirectoryError:
            raise IsADirectoryError(f"{path} is a folder: a bundle is one JSON file (as `nitro bundle build "
                                    "--output FILE` writes it)") from None
        except ValueError as exc:       # other OSErrors (permission) propagate as they are
            raise ValueError(f"bundle {path} is not readable JSON: {exc}") from None
        try:
            bundle = cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"bundle {path}: {exc}") from None
        bundle.origin = str(path)
        return bundle

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
        ``measure``. ``kind`` (``cpu``/``gpu``) picks the transfer block, else a text ``"kind"``
        in ``device_features`` (as ``--target-features`` files hold it), else the datasheet's."""
        if device_features is not None:
            device_features, kind = _given_features(device_features, kind)
        if device is None:
            from .devices import current_device_id
            device = current_device_id()
        if not isinstance(device, str) or not device:
            raise TypeError(f"a device is named by a non-empty string (an id or a reported name), got {device!r}")
        if not (kind is None or kind in ("cpu", "gpu") or kind in self.transfer):
            raise ValueError(f"kind {kind!r}: give 'cpu' or 'gpu' (the bundle's blocks: {sorted(self.transfer)})")
        local = _local_gpu(device) if query else None     # "gpu", "gpu:N": by the name it reports here
        names = [device] + ([local["id"], local["name"]] if local else [])
        for name in names:
            if name in self.devices:
                return self.model(name), {"path": "exact", "device": name}
        products = [self.product_of(name) for name in names] if self.datasheet else []
        product = next((p for p in products if p is not None), None)
        for known, entry in self.devices.items():
            if product is not None and entry.get("product") == product:
                return self.model(known), {"path": "product", "device": device, "product": product, "as": known}
        info = {"device": device, "product": product}
        features, source = self._features(device, product, device_features, query, measure, local)
        named_gpu = local is not None or device == "gpu" or device.startswith("gpu:")
        kind = kind or ("gpu" if named_gpu else self.datasheet.get(product, {}).get("kind") if product else None)
        name = kind if kind in self.transfer else "*" if "*" in self.transfer else \
            next(iter(self.transfer)) if len(self.transfer) == 1 else None
        block = self.transfer.get(name)
        if block is not None and features:
            model, details = self._transfer(self.block(name), features, device)
            if model is not None:
                return model, {"path": "transfer", **info, "features_from": source, "block": name, **details}
        reason = ("no transfer block" if block is None else "no device features" if not features else
                  f"none of the device features {sorted(features)} is one of the block's {block.device_features}")
        return None, {"path": "default", **info, "variant": self.default, "reason": reason}

    def _features(self, device, product, given, query, measure, local) -> tuple[dict, str | None]:
        if given:
            return _finite_dict(given, "device_features"), "given"
        if product is not None and self.datasheet.get(product, {}).get("features"):
            return dict(self.datasheet[product]["features"]), "datasheet"
        if query:
            from .devices import cpu_device_id, describe, describe_cpu
            try:       # what the OS or driver says (describe() adds the datasheet's figures: pandas)
                if device in ("cpu", cpu_device_id()) and not measure:
                    record = describe_cpu()
                elif not measure and (local or _local_gpu(device, by_id=True)) is not None:
                    from .devices.gpu import describe_gpu
                    record = describe_gpu((local or _local_gpu(device, by_id=True))["index"], fill=False)
                else:
                    record = describe(device, measure=measure)
            except (ValueError, OSError, RuntimeError):
                return {}, None
            values = {k: r["value"] for k, r in record.items() if isinstance(r, dict) and r.get("value") is not None}
            return values, "measured" if measure else "queried"
        return {}, None

    def _transfer(self, block: Transfer, features: dict, device: str):
        S = [[self.devices[s]["features"][f] for f in block.device_features] for s in block.sources]
        have = [i for i, f in enumerate(block.device_features) if f in features]
        if not have:
            return None, {}
        target = [float(features.get(f, math.nan)) for f in block.device_features]
        imputed = {}
        if len(have) < len(block.device_features):   # lacking features: those of the nearest source
            nearest = _nearest(S, target, have)
            for i, f in enumerate(block.device_features):
                if i not in have:
                    target[i] = S[nearest][i]
                    imputed[f] = block.sources[nearest]
        kd = block.kernel_row(S, target)
        total = sum(kd)
        weights = {s: round(v / total, 4) for s, v in zip(block.sources, kd)}
        found = {"source_weights": weights, "imputed": imputed, "outside_sources": block.outside(S, target)}
        provenance = {"method": "bundle transfer", "target": device, **found}
        return block.model(kd, self.input_features, provenance), found


def _given_features(features, kind: str | None) -> tuple[dict, str | None]:
    """``device_features`` as given to :meth:`Bundle.model_for`, without its text ``"kind"``
    (metadata, as in a ``--target-features`` file), and the kind: ``kind`` where given (a
    different text ``"kind"`` is refused), else that one."""
    from collections.abc import Mapping
    if not isinstance(features, Mapping):
        raise TypeError(f"device_features must be a mapping name -> number, got a {type(features).__name__}")
    features = dict(features)
    if isinstance(features.get("kind"), str):
        named = features.pop("kind")
        if kind is not None and kind != named:
            raise ValueError(f"kind {kind!r} and device_features' \"kind\": {named!r} differ")
        kind = named
    return features, kind


def _local_gpu(device: str, by_id: bool = False) -> dict | None:
    """This machine's GPU that ``device`` names (``gpu``, ``gpu:N``, or with ``by_id`` its id), as
    :func:`nitro.devices.gpu.list_gpus` lists it; ``None`` for other names or without a GPU.
    Listing loads the driver (pycuda imports NumPy): asked only where the name needs it."""
    if not (device == "gpu" or device.startswith("gpu:") or by_id and not device.startswith("cpu")):
        return None
    from .devices.gpu import list_gpus
    try:
        gpus = list_gpus()
    except Exception:         # a driver that fails to answer: no local GPU, as when none is listed
        return None
    if device == "gpu" or device.startswith("gpu:"):
        index = 0 if device == "gpu" else int(device[4:]) if device[4:].isdigit() else -1
        return next((g for g in gpus if g["index"] == index), None)
    return next((g for g in gpus if g["id"] == device), None)


def _nearest(rows: list[list[float]], target: list[float], cols: list[int]) -> int:
    """The row nearest ``target`` over columns ``cols``, in log1p(|x|) scaled by each column's
    standard deviation over the rows (1 where it is 0)."""
    logs = [[math.log1p(abs(row[i])) for i in cols] for row in rows]
    spread = []
    for column in zip(*logs):
        mean = sum(column) / len(column)
        sd = math.sqrt(sum((v - mean) ** 2 for v in column) / len(column))
        spread.append(sd if sd != 0 else 1.0)
    t = [math.log1p(abs(target[i])) for i in cols]
    d2 = [sum(((v - tj) / sp) ** 2 for v, tj, sp in zip(row, t, spread)) for row in logs]
    return d2.index(min(d2))


def check_output_folder(path) -> None:
    """A clear error, before any writing, when the folder a file is to be written in is missing."""
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the folder {path.parent} does not exist (create it first)")


def _read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _file_path(path, verb: str):
    """``path`` where it names a file (``str`` or ``os.PathLike``); else a TypeError. An ``int``
    would be taken by ``open`` as a file descriptor, and the caller's file closed after reading."""
    if isinstance(path, (str, os.PathLike)):
        return path
    hint = " (a parsed bundle: Bundle.from_dict)" if isinstance(path, dict) else ""
    raise TypeError(f"a bundle is {verb} a file path (str or os.PathLike), got a {type(path).__name__}{hint}")


def load_bundle(path) -> Bundle:
    """Read a bundle file, its outline checked (:meth:`Bundle.load`; ``cv.use_bundle(bundle)`` then
    picks this device's model, see :meth:`Bundle.model_for`)."""
    return Bundle.load(path)
