"""Building a model bundle (:mod:`nitro.bundle`) from the store: the tuning side, which may use
scikit-learn and pandas; loading the bundle needs neither."""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import devices as devices_mod
from .bundle import Bundle, Transfer
from .dataset import Measurements
from .devices import datasheet
from .learn import SELECTORS
from .learn.kron import device_kernel, source_distances, standardised_devices, varying
from .store import Store
from .transfer.coverage import choose_variants
from .transfer.data import TransferData
from .transfer.fit import LAMBDA
from .transfer.prepare import Prepared
from .variant import code_variant

MIN_KIND = 3    # a device kind gets its own transfer block from this many devices (as tune_from_source)


def device_models(store: Store, name: str, devices: list[str], learner="svm") -> dict:
    """Each device's stored model; a device without one gets an on-device model fitted on its
    rows with ``learner`` and stored, so that the store and the bundle hold the same model."""
    from .tuner import Autotuner

    meta = store.meta(name)
    models = {}
    for device in devices:
        stored = store.selector_model(name, device)
        if stored is None:
            rows = store.rows(name, device)
            if not rows:
                raise ValueError(f"{name}: device {device!r} has neither a stored model nor training rows")
            cv = code_variant(name, {v: (lambda *a: None) for v in meta["variants"]},
                              {f: (lambda *a: 0.0) for f in meta["features"]})
            cv.device_id = device
            model = Autotuner(name, store, learner=learner, progress=False).fit_rows(cv, rows)
            store.put_model(name, device, model.to_dict())
            models[device] = model
        else:
            models[device] = stored
    return models


def low_estimate(provenance: dict) -> str | None:
    """Why a stored model may be far off on its device, where its own estimate says so: a
    zero-shot model (``tune_from_source``) whose estimate is "low" or "uncertain" (a new family),
    or a few-shot model whose cross-validated figure on the target's timed inputs is "low" or
    "uncertain" (too few inputs to vouch for 90%); ``None`` otherwise."""
    zero = provenance.get("confidence") or {}
    if zero.get("level") in ("low", "uncertain"):
        return f"zero-shot, estimate {zero['level']}: {'; '.join(zero.get('low_because', []))}"
    few = (provenance.get("few_shot") or {}).get("estimate") or {}
    if few.get("level") == "low":
        return f"few-shot, {100 * few['quality']:.1f}% of the optimum on the {few.get('inputs', '?')} inputs timed"
    if few.get("level") == "uncertain":
        return (f"few-shot, {100 * few['quality']:.1f}% of the optimum on the {few.get('inputs', '?')} inputs timed, "
                f"too few to vouch for more than {100 * few['lower']:.1f}%")
    return None


def inputs_to_time(provenance: dict) -> int | None:
    """How many target inputs the model's own estimate advises timing where :func:`low_estimate`
    names it: the zero-shot advice's few-shot count, twice the inputs of a few-shot model still
    low on them, the count that would vouch for an uncertain one; ``None`` where not recorded."""
    zero = provenance.get("confidence") or {}
    if zero.get("level") in ("low", "uncertain"):
        return zero.get("few_shot_inputs")
    few = (provenance.get("few_shot") or {}).get("estimate") or {}
    if few.get("level") == "low" and isinstance(few.get("inputs"), int):
        return 2 * few["inputs"]
    return few.get("inputs_needed") if few.get("level") == "uncertain" else None


def transfer_block(store: Store, name: str, sources: list[str]) -> Transfer:
    """The Kronecker KRR model of :func:`nitro.transfer.tune.tune_from_source` over ``sources``
    (all device features known on every source, no feature search), in closed form: the model
    for a device with kernel row ``kd`` has weights ``Σ_s kd[s]·W_s``, ``W_s`` being the weights
    for the unit row of source ``s`` (the dual solution is linear in ``kd``)."""
    meta = store.meta(name)
    records = {s: store.device(s) for s in sources}
    frame = pd.DataFrame({d: devices_mod.feature_values(r) for d, r in records.items()}).T
    m = Measurements.from_rows({s: store.rows(name, s) for s in sources}, meta["variants"], meta["features"],
                               devices=frame)
    choice = choose_variants(m, sources)
    data = TransferData.from_measurements(m, devices=sources, variants=choice.variants)
    prep = Prepared.build(data, sources, np.arange(len(data.inputs)))
    cols = list(prep.features)
    D = prep.D[:, cols]
    Kd = device_kernel(D, prep.sources, prep.sources[0])[0]      # among the sources: any target
    Z = standardised_devices(D, prep.sources)
    weights, mu = [], None
    for i in range(len(sources)):
        h, mu = prep.grid.dual(prep.sources, Kd, np.eye(len(sources))[i], LAMBDA)
        weights.append(prep.grid.weights(h))
    A = D[prep.sources]
    mean, std = A.mean(axis=0), A.std(axis=0)
    varies = varying(A)
    spread2 = source_distances(Z, prep.sources, prep.sources[0])[1] if Z is not None else 0.0
    return Transfer(sources=list(sources), device_features=[data.device_features[j] for j in cols],
                    variants=list(data.variants),
                    input={**prep.input_params(),
                           "gamma": float(prep.grid.gamma_x), "centers": prep.grid.centers},
                    weights=np.asarray(weights), offset=mu.tolist(), dev_mean=mean[varies], dev_std=std[varies],
                    varies=varies, spread2=float(spread2))


def datasheet_table() -> dict:
    """The datasheet's names and figures, for matching and describing devices at run time."""
    out = {}
    for row in datasheet.load().to_dict("records"):
        out[row["id"]] = {"kind": row["kind"], "names": datasheet.names(row),
                          "features": {k: r["value"] for k, r in datasheet.features(row).items()}}
    return out


def build_bundle(store: Store, name: str, devices=None, learner="svm", default: str | None = None,
                 transfer: bool = True) -> Bundle:
    """A bundle of computation ``name`` for ``devices`` (default: every device with rows), its
    ``default`` variant (the first one unless given), with a transfer block per device kind shared by at least ``MIN_KIND`` of them and
    one over all of them (``"*"``) for other kinds and devices of unknown kind; a block's sources
    are devices with rows and features (a model without rows ships, but is no source)."""
    if learner not in SELECTORS:
        raise ValueError(f"unknown learner {learner!r}; known: {', '.join(SELECTORS)}")
    meta = store.meta(name)
    known = store.devices(name)
    devices = list(devices) if devices else known
    if not devices:
        raise ValueError(f"{name}: no device has training rows in the store")
    with_model = set(store.model_devices(name))     # existence only: each model is read (and checked) once below
    unknown = [d for d in devices if d not in known and d not in with_model]
    if unknown:        # checked, as the default is, before any model is fitted and stored
        raise ValueError(f"{name}: the store has neither rows nor a model of {', '.join(map(repr, unknown))}; "
                         f"its devices: {', '.join(known)}")
    default = default or meta["variants"][0]
    if default not in meta["variants"]:
        raise ValueError(f"{name}: the default {default!r} is not one of its variants {meta['variants']}")
    stored = [d for d in devices if d in with_model]
    models = device_models(store, name, devices, learner)
    info = {}
    for d in devices:
        record = store.device(d, missing_ok=True) or {}
        row = datasheet.lookup(d)
        info[d] = {"kind": store.device_metadata(d).get("kind"), "product": row["id"] if row else None,
                   "features": {k: v for k, v in devices_mod.feature_values(record).items() if np.isfinite(v)}}
    blocks = {}
    if transfer:
        # a transfer source needs rows: a model without them (tune-from-source's target) ships as it is
        with_features = [d for d in devices if info[d]["features"] and d in known]
        kinds = pd.Series({d: info[d]["kind"] for d in with_features}, dtype=object)
        for kind, group in kinds.groupby(kinds.values):
            if len(group) >= MIN_KIND:
                blocks[str(kind)] = transfer_block(store, name, list(group.index))
        covered = {s for b in blocks.values() for s in b.sources}
        if len(with_features) >= 2 and set(with_features) - covered:   # other kinds, unknown kinds
            blocks["*"] = transfer_block(store, name, with_features)
    fitted = [d for d in devices if d not in stored]
    return Bundle.build(name, meta["variants"], meta["features"], default, models, info=info, transfer=blocks,
                        datasheet=datasheet_table(),
                        provenance={"built_from": _store_kind(store), "devices": devices,
                                    "stored_models": stored, "fitted": {"learner": str(learner), "devices": fitted},
                                    "low_estimates": {d: why for d in stored
                                                      if (why := low_estimate(models[d].provenance))},
                                    "inputs_to_time": {d: k for d in stored if low_estimate(models[d].provenance)
                                                       and (k := inputs_to_time(models[d].provenance))},
                                    "transfer_blocks": {k: b.sources for k, b in blocks.items()}})


def _store_kind(store: Store) -> str:
    """The store a bundle came from, as the shipped file may say it: a server's address (never its
    password), but not the path of the author's own embedded store."""
    return "embedded store" if store.name.startswith("embedded store") else store.name
