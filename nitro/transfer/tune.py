"""``tune_from_source``: a target device's model from the store's source-device data."""
from __future__ import annotations

import math
import re
import threading
import time
import warnings
from typing import Callable, Collection

import numpy as np
import pandas as pd

from .. import devices as devices_mod
from ..dataset import METADATA_COLUMNS, NUMBER_WITH_UNIT, Measurements
from ..learn.kron import TIME_WEIGHT, check_time_weight, varying_columns
from ..row import TrainingRow
from ..metrics import fraction_of_optimum
from ..search import budget_count
from ..model import SelectorModel, transfer_origin
from ..progress import progress_bar
from ..store import Store, StoreError
from ..store.redis_store import same_computation
from .coverage import choose_variants, sources_of_kind
from .confidence import TransferEstimateWarning, estimate_quality, estimate_warning, few_shot_verdict, nearest_distances
from .cvdfs import cv_dfs, family_groups, held_out_results
from .data import TransferData, concatenate, stack_times
from .fewshot import pick_inputs
from .fewshot_model import TREES_FROM, cross_validated_quality, fit_few_shot, sources_wrong_choice_loss
from .fewshot_trees import TreesRefit
from .fit import export_model, transfer_scores
from .pdfs import profile_dfs
from .prepare import Prepared, shared_rows


def _device_frame(records: dict[str, dict]) -> pd.DataFrame:
    return pd.DataFrame({d: devices_mod.feature_values(r) for d, r in records.items()}).T


NUMBER_TEXT = re.compile(rf"{NUMBER_WITH_UNIT}|[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")   # "7680 cores", "1.4"


def given_features(target_features) -> tuple[dict[str, float], dict[str, str]]:
    """The device features (numbers) and metadata (text, ``"kind": "gpu"``) of ``target_features``:
    ``{name: value}`` with a number, text, ``None`` (unknown) or a feature record ``{"value": ...}``
    as a value; nitro's own ``device.json`` (``{device: {name: {"value": ...}}}``) is read as its one
    device's record. A number written as text (``"7680 cores"``) is an error naming it: read as
    metadata, it would leave the feature out without a word."""
    given = dict(target_features)
    inner = next(iter(given.values()), None)
    if len(given) == 1 and isinstance(inner, dict) and inner and all(isinstance(r, dict) for r in inner.values()):
        given = inner                       # {device: record}, as nitro writes device.json
    numbers, text = {}, {}
    for name, value in given.items():
        if isinstance(value, dict):
            if "value" not in value:
                raise ValueError(f"target feature {name!r}: a record {{'value': ...}} or a plain value is needed, "
                                 f"got {value!r}")
            value = value["value"]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue                        # unknown, as a missing microbenchmark: left out, and said so
        if isinstance(value, str):
            if name not in METADATA_COLUMNS and NUMBER_TEXT.fullmatch(value.strip()):
                raise ValueError(f"target feature {name!r} is text ({value!r}): write it as a JSON number, in the "
                                 "unit of the sources' figures; text is metadata, never a device feature")
            text[name] = value
        elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
                and math.isfinite(value):
            numbers[name] = float(value)
        else:
            raise ValueError(f"target feature {name!r}: a finite number, text or null is needed, got {value!r}")
    return numbers, text


def _target_metadata(store: Store, target: str, target_features, record: dict, described: bool) -> dict[str, str]:
    """The target's metadata: the text values of ``target_features`` (``{"kind": "gpu",
    "arch": "hopper"}``), else the store's, to which a device of this machine ``described``
    here (its ``record``) adds what it reports (:func:`_described_metadata`)."""
    if target_features is not None:
        return given_features(target_features)[1]
    stored = store.device_metadata(target)
    if described and (row := _datasheet_product(target)) is not None:
        return {**{k: row[k] for k in ("kind", "vendor") if isinstance(row.get(k), str) and row[k]}, **stored}
    return {**_described_metadata(target, record), **stored} if described else stored


def _datasheet_product(target: str) -> dict | None:
    """The datasheet row whose id ``target`` is exactly (``a100_sxm4_40gb``), else ``None``: only
    an exact id takes published figures, so that a typo is an error, not a near product's figures."""
    from ..devices import datasheet
    row = datasheet.lookup(target)
    return row if row is not None and row["id"] == target else None


def _described_metadata(target: str, record: dict | None = None) -> dict[str, str]:
    """The metadata of a device of this machine that ``describe`` measures: its CPU, else a GPU
    (its vendor and family read from its ``record`` once described)."""
    if target == devices_mod.current_device_id():
        return devices_mod.local_metadata(target)
    return devices_mod.local_metadata(target, record) if record is not None else {"kind": "gpu"}


def _target_record(store: Store, target: str, target_features, keep: bool = False, pending: list | None = None) -> dict:
    """The target's feature record: the numbers of ``target_features``, else the store's
    record, else, when the target is a device of this machine (its CPU, a local GPU's id), that
    device described (and measured) here, else, when it is a datasheet product id
    (``a100_sxm4_40gb``), that product's published figures. Any other name is an error, never this machine's
    figures under a name they do not describe (a typo must not give a model for the wrong device).
    ``keep``: store the record where the store has none; given features are stored only once a
    model is (``pending`` collects that step), so that features no model could be built from are
    not left behind as the device's record."""
    if target_features is not None:
        numbers, text = given_features(target_features)
        record = {n: {"value": v} for n, v in numbers.items()}
        stored = store.device(target, missing_ok=True) if keep else None
        if keep and stored is None:    # a bundle of its stored model describes it
            user = {n: {**r, "unit": "", "source": "user"} for n, r in record.items()}
            if pending is None:
                _keep_record(store, target, user, text)
            else:
                pending.append(lambda: _keep_record(store, target, user, text))
        differ = sorted(n for n, r in record.items() if n in (stored or {}) and stored[n].get("value") != r["value"])
        if differ:
            warnings.warn(f"{target}: the store's device record has other values of {differ} than the features "
                          "given; the model is built on the given ones and the record is kept", stacklevel=3)
        return record
    record = store.device(target, missing_ok=True)
    if record is not None:
        return record
    row = _datasheet_product(target)
    if row is not None:      # (this machine's ids start with cpu_ or gpu, no datasheet id does)
        from ..devices import datasheet
        record = datasheet.features(row)       # a product no machine here is: its published figures
        warnings.warn(f"{target}: no record in the store; the datasheet's published figures of the {row['name']} "
                      "describe it (give --target-features / target_features= for others)", stacklevel=3)
        if keep:
            _keep_record(store, target, record, {k: row[k] for k in ("kind", "vendor") if isinstance(row.get(k), str)
                                                 and row[k]})
        return record
    try:
        record = devices_mod.describe(target)
    except ValueError:
        raise ValueError(f"unknown target device {target!r}: the store has no features for it and it is not "
                         f"a device of this machine ({devices_mod.current_device_id()} or a local GPU); devices "
                         f"with features in the store: {store.device_ids()}; give its features "
                         "(--target-features FILE, target_features=...) or record them on that machine") from None
    if keep:   # measured once: later models, refits and rows of this device read the same figures
        _keep_record(store, target, record, _described_metadata(target, record))
    return record


def _keep_record(store: Store, target: str, record: dict, metadata: dict) -> None:
    """Store a target's feature record and metadata (its kind chooses the default sources, and
    bundles of its model carry both); a read-only store still gets its model built."""
    try:
        store.put_device(target, record)
        store.put_device_metadata(target, metadata, replace=False)
    except Exception as exc:
        warnings.warn(f"{target}: its device record could not be stored ({type(exc).__name__}: {exc}); "
                      "it is measured (or given) again next time", stacklevel=4)


def _default_sources(store: Store, name: str, target: str, target_meta: dict) -> tuple[list[str], dict]:
    """Every other device with rows, narrowed to the target's kind when enough share it."""
    candidates = [d for d in store.devices(name) if d != target]
    kinds = {d: store.device_metadata(d).get("kind") for d in candidates}
    kinds[target] = target_meta.get("kind")
    known = sorted({k for d, k in kinds.items() if d != target and k})
    if kinds[target] is None and len(known) > 1:    # a CPU target beside GPU sources, or the reverse
        counts = ", ".join(f"{k}: {sum(v == k for d, v in kinds.items() if d != target)}" for k in known)
        warnings.warn(f"{name}: the kind of {target!r} is unknown, so sources of every kind are used ({counts}) and "
                      "only the device features all of them have; give its kind (\"kind\": \"cpu\" in its features, "
                      "or a kind column on import) to use the sources of its kind", stacklevel=4)
    sources, left_out = sources_of_kind(kinds, target, candidates)
    featureless = [s for s in sources if store.device(s, missing_ok=True) is None]
    left_out.update({s: "no device features recorded (its devices.csv row gives none): write them in "
                        "devices.csv and import it again to use it as a source" for s in featureless})
    return [s for s in sources if s not in featureless], left_out


def _featureless_sources_error(store: Store, name: str, sources: list[str]) -> None:
    """Refuse named sources that have rows but no device-feature record: a source's features
    place it beside the target; without them it cannot be learnt from."""
    featureless = [s for s in sources if store.device(s, missing_ok=True) is None]
    if featureless:
        raise ValueError(f"{name}: source devices {featureless} have no device features recorded (their "
                         "devices.csv rows give none): write their features in devices.csv and import it again, "
                         "or leave them out of --sources")


def recorded_meta(store: Store, name: str) -> dict:
    """The stored declaration of ``name``, which a target learns from; where nothing is recorded
    under that name, a StoreError that says what to record first rather than only that the name
    is unknown (a target is tuned after its sources, and that order is easy to miss)."""
    if name not in store.computations():
        known = ", ".join(store.computations()) or "none"
        raise StoreError(f"{name}: nothing is recorded under this name in {store!r} (recorded: {known}): a target "
                         "learns from the training rows of source devices, so record them first: tune() with "
                         "record=True on each source device, sharing this store, or nitro store import DIR "
                         f"{name} for rows recorded elsewhere")
    return store.meta(name)


def _load(store: Store, name: str, variants, features, sources, target, target_features, keep_variants,
          progress: bool, keep_target: bool = False, pending: list | None = None):
    """The sources' rows and devices and the target's device, as :class:`TransferData`:
    ``(data, target index, provenance)``; ``pending`` collects what to store with the model
    (:func:`_target_record`)."""
    meta = recorded_meta(store, name)
    if not same_computation(meta, variants, features):
        raise ValueError(f"{name}: the store holds variants {meta['variants']} and features "
                         f"{meta['features']}, not {list(variants)} and {list(features)}")
    target = target or devices_mod.current_device_id()
    recorded = store.devices(name)
    described = target_features is None and store.device(target, missing_ok=True) is None
    target_record = _target_record(store, target, target_features, keep=keep_target, pending=pending)
    target_meta = _target_metadata(store, target, target_features, target_record, described)
    if isinstance(sources, str):          # one name, not its letters
        raise TypeError(f"{name}: sources are a list of device ids, got {sources!r} (one source: [{sources!r}])")
    named = bool(sources)                 # the default sources leave featureless devices out themselves
    sources, sources_left_out = (list(sources), {}) if named else _default_sources(store, name, target, target_meta)
    missing = [s for s in sources if s not in recorded]
    if missing:
        raise ValueError(f"{name}: no training rows for source devices {missing}; recorded: {recorded}")
    if target in sources:
        raise ValueError(f"{name}: the target {target!r} cannot also be a source")
    if named:
        _featureless_sources_error(store, name, sources)
    if not sources:
        only = f" but the target {target!r} itself" if target in recorded else ""
        raise ValueError(f"{name}: no source device has training rows in the store{only}: a source is another "
                         "device (tune() on it, or bring its rows in with nitro store import)"
                         + "".join(f"; left out {s}: {why}" for s, why in sources_left_out.items()))
    records = {**{s: store.device(s) for s in sources},
               target: target_record}
    rows = {s: store.rows(name, s) for s in progress_bar(sources, desc="reading rows", unit="source", enabled=progress)}
    m = Measurements.from_rows(rows, list(variants),
                               list(features), devices=_device_frame(records))
    try:
        choice = choose_variants(m, sources, keep_variants)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    data = TransferData.from_measurements(m, devices=sources + [target], variants=choice.variants)
    t = data.device_index(target)
    source_idx, train, _ = shared_rows(data, sources, np.arange(len(data.inputs)), extra_devices=[target])
    ran = np.isfinite(data.times[np.ix_(source_idx, train)]).any(axis=2)
    provenance = {"method": "tune_from_source", "target": target, "sources": sources,
                  "target_metadata": target_meta, "sources_left_out": sources_left_out, "variants": choice.variants,
                  "variants_left_out": choice.left_out, "n_training_rows": int(ran.sum())}
    if not ran.all():             # sources that timed different inputs: their rows are filled in
        provenance["rows_filled_in"] = {"inputs": int(len(train)), "timed_on_every_source": int(ran.all(axis=0).sum()),
                                        "rows": int((~ran).sum())}
    return data, t, provenance


def refit_from_sources(store: Store, name: str, variants: list[str], features: list[str], sources=None,
                       target: str | None = None, target_features=None, keep_variants=None,
                       progress: bool = False) -> TreesRefit:
    """Refining mode's refit that learns from the sources' rows as well as the target's
    (``cv.refine(refit=refit_from_sources(store, cv.name, cv.variant_names, cv.feature_names))``):
    every refit fits per-variant boosted trees on the sources' rows in ``store`` and the rows the
    target's calls timed (:class:`nitro.transfer.fewshot_trees.TreesRefit`). Sources, target and
    variants are chosen as by :func:`tune_from_source` with the same arguments, so the refitted
    model chooses among the variants of the model it replaces. Replayed on the SpMV data, it
    reached 97.5% of the optimum against 96.7 for the kernel correction
    (``benchmarks/README.md``, "Refining mode")."""
    data, t, _ = _load(store, name, variants, features, sources, target, target_features, keep_variants, progress)
    sources, train, columns = shared_rows(data, [i for i in range(len(data.devices)) if i != t],
                                          np.arange(len(data.inputs)), extra_devices=[t])
    return TreesRefit(data, sources, train, t, columns)


def _recorded_rows(store: Store, name: str, device: str, variants: list[str], features: list[str]) -> dict:
    """The rows recorded for ``device`` by their feature values: ``{features: times}`` in
    ``variants`` order, NaN where a variant did not run (or early stopping skipped it), +inf
    where it failed."""
    from ..search import SKIPPED
    out = {}
    for r in store.rows(name, device):
        key = tuple(float(r.features[f]) for f in features)
        out[key] = [r.times[v] if r.times.get(v) is not None else
                    (math.inf if v in r.failed and r.failed[v] != SKIPPED else math.nan) for v in variants]
    return out


class SourcesRefit:
    """:func:`refit_from_sources`, with the sources' rows read at the first refit (in refining
    mode's refit thread, so that turning refining on does not wait for the store), together with
    the rows already recorded for the target (a few-shot model's picks, earlier refining
    sessions): each refit learns from those and this session's rows, merged by feature values
    (each variant's fastest time). Where the sources' rows cannot be read, refits correct the
    model as without them (:func:`nitro.refine.default_refit`), ``error`` says why, and a later
    refit tries again (after ``RETRY`` seconds, doubling up to an hour: a store may come back).

    The reading is :meth:`prepare`, which a refit in another process
    (:class:`nitro.refit_worker.RefitProcess`) runs in the serving process; ``version`` counts
    the reads that changed what a refit learns from, and a pickled copy leaves the store out."""

    RETRY = 30.0

    def __init__(self, store, name: str, variants: list[str], features: list[str], **options):
        self.store, self.name, self.variants, self.features, self.options = store, name, variants, features, options
        self.refit, self.error = None, None
        self.target_features: dict | None = None    # the model's, for a target the store has no record of
        self.recorded: dict = {}
        self.version = 0
        self._lock = threading.Lock()
        self._retry_at, self._backoff = 0.0, self.RETRY

    def __getstate__(self):
        return {**self.__dict__, "store": None, "_lock": None}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @classmethod
    def for_model(cls, model: SelectorModel, store, name: str, variants: list[str], features: list[str]):
        """The refit for ``model`` when ``tune_from_source`` built it, or a refit of such a model
        (a refined model saved and loaded again): its provenance names the sources, target,
        variants and the target's device features (used where the store has no record of the
        target, as for a device described by ``target_features``); else ``None``."""
        p = transfer_origin(model.provenance)
        if not p.get("sources") or not p.get("target"):
            return None
        refit = cls(store, name, variants, features, sources=p["sources"], target=p["target"],
                    keep_variants=p.get("variants"))
        refit.target_features = p.get("target_features")
        return refit

    def prepare(self, base) -> None:
        """Read the sources' rows and the target's recorded ones, once they are read (a failed
        read is tried again after the back-off); nothing to do without a store (a pickled copy)."""
        with self._lock:
            if self.refit is None and self.store is not None and time.monotonic() >= self._retry_at:
                try:
                    store = Store(self.store) if isinstance(self.store, str) else self.store
                    target = self.options.get("target") or devices_mod.current_device_id()
                    options = self.options
                    if self.target_features is not None and store.device(target, missing_ok=True) is None:
                        options = {**options, "target_features": self.target_features}
                    refit = refit_from_sources(store, self.name, self.variants, self.features, **options)
                    self.recorded = _recorded_rows(store, self.name, target, list(base.variants),
                                                   list(base.input_features))
                    self.refit, self.error = refit, None
                    self.version += 1
                except Exception as exc:  # the rows cannot be read: refine as without them for now
                    self.error = f"{type(exc).__name__}: {exc}"
                    self._retry_at = time.monotonic() + self._backoff
                    self._backoff = min(2.0 * self._backoff, 3600.0)

    def __call__(self, base, X, times):
        self.prepare(base)
        if self.refit is None:
            from ..refine import default_refit
            return default_refit(base, X, times)
        merged = dict(self.recorded)
        for x, t in zip(np.asarray(X, dtype=np.float64).tolist(), np.asarray(times, dtype=np.float64).tolist()):
            before = merged.get(tuple(x))
            merged[tuple(x)] = t if before is None else np.fmin(before, t).tolist()   # NaN: not run there
        X = np.array(list(merged), dtype=np.float64).reshape(len(merged), len(base.input_features))
        return self.refit(base, X, np.array(list(merged.values()), dtype=np.float64).reshape(len(merged), -1))


def _unknown_features(data: TransferData, prep: Prepared, t: int) -> dict[str, str]:
    """Device features some involved device lacks, and which: a feature missing on the target
    (not in its given features, or a microbenchmark that failed here) cannot be used however
    the sources vary, and the model then differs from one built with it."""
    out = {}
    for j, f in enumerate(data.device_features):
        if j in prep.features:
            continue
        missing = [data.devices[d] for d in [*prep.sources, t] if not np.isfinite(data.D[d, j])]
        if data.devices[t] in missing:
            others = [m for m in missing if m != data.devices[t]]
            out[f] = f"unknown on the target {data.devices[t]}" + (f" and on {', '.join(others)}" if others else "")
        elif missing:
            out[f] = f"unknown on source{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
    return out


def tune_from_source(store: Store, name: str, variants: list[str], features: list[str], sources=None,
                     target: str | None = None, target_features=None,
                     profiling_based_dfs: bool = False, search_based_dfs: bool | None = None,
                     k: int = 1, max_subset_size: int = 3, selection: str = "ensemble",
                     n_jobs: int | None = None, progress: bool = True, learner=None,
                     target_budget: int | float | None = None,
                     measure_target: Callable[[list[str]], list[TrainingRow]] | None = None,
                     measurable: Collection[str] | None = None,
                     keep_variants=None, save: bool = True, time_weight: float = TIME_WEIGHT) -> SelectorModel:
    """Build (and store) computation ``name``'s model for ``target`` (default: this device)
    from every source device's training rows and device features in ``store``
    (``save=False``: returned only, as a read-only store user needs).

    Default sources are the other devices with rows; when the device metadata ``kind`` is
    known for the target and at least three of them share it, only those. The model chooses
    among ``keep_variants``, by default the variants timed on every source
    (:func:`nitro.transfer.coverage.choose_variants`); its provenance names the variants and
    sources left out and why (``variants_left_out``, ``sources_left_out``).

    ``search_based_dfs``: CV-DFS (the subset ensemble of :mod:`nitro.transfer.cvdfs`); by default
    on wherever there are three or more sources (it needs them), so that the default model is the
    one ``nitro evaluate`` reports (on the SpMV data 94.5% of the optimum leave-one-GPU-out and
    93.7 leave-one-family-out, against 93.8 and 93.4 on every device feature); ``False``: every
    device feature.

    ``time_weight``: the power of each training input's typical fastest time in its weight in
    the kernel fit (:func:`nitro.learn.kron.time_weights`; 0, the default: every input alike;
    0.5 favours the inputs that take the most time, for the total time of many calls).

    ``learner`` (a selector or its name in :data:`nitro.learn.SELECTORS`) replaces the
    Kronecker KRR: it is fitted on the sources' rows ``[input ∘ selected device features]``
    and the model holds the target's values of those features as constants.

    Few-shot: with ``target_budget`` (a count, or a fraction of the training inputs), that
    many representative training inputs are timed on the target (rows already recorded for it
    are reused; ``measure_target(input_ids)`` measures the rest, among ``measurable`` where given
    (the ids it can time), and without it they are chosen among the inputs the target has
    recorded), and the few-shot model learns from them
    (:mod:`nitro.transfer.fewshot_model`): from ``TREES_FROM`` (6) inputs boosted trees on them
    and the sources' rows together (model kind ``gbt``), below that the zero-shot model
    corrected by them (kind ``kernel``)."""
    time_weight = check_time_weight(time_weight)
    pending: list = []        # the given target features' record, stored with the model only
    data, t, provenance = _load(store, name, variants, features, sources, target, target_features,
                                keep_variants, progress, keep_target=save, pending=pending)
    prep = Prepared.build(data, [i for i in range(len(data.devices)) if i != t], np.arange(len(data.inputs)),
                          extra_devices=[t], time_weight=time_weight)
    if time_weight:
        provenance["time_weight"] = time_weight
    target, sources = data.devices[t], [data.devices[i] for i in prep.sources]
    candidates = [data.device_features[j] for j in prep.features]
    if not candidates:
        raise ValueError(_no_shared_feature(name, data, prep.sources, t))
    unknown = _unknown_features(data, prep, t)
    if unknown:
        provenance["device_features_left_out"] = unknown
    varies = [data.device_features[j] for j in varying_columns(prep.D, prep.sources, prep.features)]
    if len(varies) < len(candidates):    # the sources cannot show such a feature's effect
        why = "one source: no device feature can vary" if len(sources) == 1 else \
            "constant (within about 1%) over the sources"
        provenance["device_features_left_out"] = {**provenance.get("device_features_left_out", {}),
                                                  **{f: why for f in candidates if f not in varies}}
        candidates = varies or candidates   # none varies: the kernel leaves them all out itself
    pdfs = profiling_based_dfs
    sdfs = len(sources) >= 3 if search_based_dfs is None else search_based_dfs
    if not sdfs:
        provenance["cv_dfs_off"] = ("search_based_dfs=False" if search_based_dfs is False else
                                    f"CV-DFS needs 3 or more sources, {len(sources)} given")
    if pdfs:
        proxy, variant = {}, {}
        for s in sources:
            proxy.update(store.proxy_profiles(s))
            variant.update(store.profiles(name, s))
        selected = profile_dfs(proxy, variant, candidates)
        if not selected:
            raise ValueError(f"{name}: P-DFS kept none of the device features {candidates}")
        provenance["p_dfs"] = selected
        candidates = selected
    subsets = [candidates]
    # one source holds none out: nothing is validated, with or without its family
    groups = _new_family_groups(store, sources, provenance["target_metadata"].get("arch")) if len(sources) > 1 else None
    if groups:
        provenance["validated_without_family"] = True
    if sdfs:
        result = cv_dfs(prep, candidates, max_size=max_subset_size, k=k, selection=selection,
                        n_jobs=n_jobs, progress=progress, groups=groups)
        subsets = result.subsets
        provenance["cv_dfs"] = {"selection": selection, "frequencies": result.frequencies,
                                "seconds": result.seconds}
    used = sorted({f for s in subsets for f in s if f in varies})
    if learner is not None:
        if target_budget is not None:
            raise ValueError("target_budget corrects the default Kronecker KRR model; it cannot be combined with learner=")
        return _fit_learner(store, name, learner, data, prep, t, used, features, provenance, save, pending)
    cols = [[data.device_features.index(f) for f in s] for s in subsets]
    scores, beta, mu = transfer_scores(prep, t, cols, inputs=prep.train)
    held_out = result.held_out if sdfs else held_out_results(prep, [tuple(c) for c in cols], groups=groups, n_jobs=n_jobs)
    provenance["confidence"] = estimate_quality(scores, held_out, prep.D[:, prep.features], prep.sources, t,
                                                data.devices, new_family=bool(groups),
                                                wrong_choice_loss=sources_wrong_choice_loss(
                                                    data.times[np.ix_(prep.sources, prep.train)]))
    provenance["confidence"]["held_out"] = held_out
    provenance.update(device_features=used, subsets=[[f for f in s if f in varies] for s in subsets],
                      target_features={f: float(data.D[t, data.device_features.index(f)]) for f in used})
    if target_budget is not None:    # the estimate is of the zero-shot model the few-shot one replaces
        provenance["zero_shot_confidence"] = provenance.pop("confidence")
    elif (said := estimate_warning(name, target, provenance["confidence"])) is not None:
        warnings.warn(said, TransferEstimateWarning, stacklevel=3)      # never silent in Python either
    model = export_model(prep, beta, mu, list(features), provenance)
    if target_budget is not None:
        model = _few_shot(store, name, prep, t, target_budget, measure_target, measurable, model, scores)
    if save:
        _store_model(store, name, target, model, pending)
    return model


def _no_shared_feature(name: str, data: TransferData, sources: list[int], t: int) -> str:
    """The error where no device feature is known on every source and on the target: what each side has."""
    known = np.isfinite(data.D)
    on_target = [f for j, f in enumerate(data.device_features) if known[t, j]]
    on_sources = [f for j, f in enumerate(data.device_features) if known[sources, j].all()]
    target = data.devices[t]
    return (f"{name}: no device feature is known on every source and on {target!r}: "
            + (f"{target!r} has {on_target}" if on_target else f"none is known on {target!r} (no number in its "
               "features, or in its stored record)")
            + (f", the sources all have {on_sources}; give the target's values of those (--target-features FILE, "
               "target_features=...)" if on_sources else ", and none is known on every source"))


def _store_model(store: Store, name: str, target: str, model: SelectorModel, pending: list = ()) -> None:
    """Store ``model`` for ``target``, saying so where it replaces the model ``tune()`` trained on the
    target's own rows (transfer answers a device without them; the rows stay, so tune() brings
    that model back)."""
    stored = (store.model(name, target) or {}).get("provenance") or {}
    if stored.get("method") == "on-device" and stored.get("device") == target:
        warnings.warn(f"{name}: the model tune() trained on {target} from {stored.get('n_inputs', '?')} of its own "
                      "inputs is replaced by this transferred one; its rows stay in the store, so tune() there brings "
                      "it back (save=False in Python, or --output FILE on the command line, leaves the stored model "
                      "as it is)", stacklevel=4)
    for keep in pending:          # the target's given record, now that a model describes it
        keep()
    store.put_model(name, target, model.to_dict())


def _learner_check(est, prep, t: int, cols: list[int]) -> dict:
    """What can be said of a ``learner=`` model before the target runs anything (it has no
    quality estimate): whether the target lies outside the sources' device features, and its
    choices on the training inputs. A learner whose kernel or splits see the target far from
    every source may choose one variant for every input where the sources' fastest vary:
    ``warning`` says so."""
    from ..learn import predict_index
    data = prep.data
    distance, spread, nearest = nearest_distances(prep.D[:, cols], prep.sources, t)
    chosen = predict_index(est, concatenate(data.X[prep.train], data.D[t, cols]))
    counts = np.bincount(chosen, minlength=len(data.variants))
    best = np.concatenate([data.labels(s, prep.train) for s in prep.sources])
    shares = np.bincount(best[best >= 0], minlength=len(data.variants)) / max(1, (best >= 0).sum())
    warning = None
    if counts.max() >= 0.99 * len(chosen) and (shares >= 0.05).sum() >= 2:
        v = data.variants[int(counts.argmax())]
        warning = (f"the {type(est).__name__} chooses {v} for {counts.max()} of {len(chosen)} training inputs on "
                   f"{data.devices[t]}, where {int((shares >= 0.05).sum())} variants are each fastest on 5% or more "
                   "of the sources' inputs: it does not tell inputs apart there; use the default model")
    return {"outside_sources": bool(distance > spread), "nearest_source": data.devices[nearest],
            "choices": {v: int(c) for v, c in zip(data.variants, counts)}, "warning": warning}


def _new_family_groups(store: Store, sources: list[str], target_arch: str | None) -> dict[int, str] | None:
    """Source index → architecture family (the store's device metadata), when the target's
    family ``target_arch`` is known and not among the sources' (validate as used: without each
    source's family); ``None`` otherwise (:func:`nitro.transfer.cvdfs.family_groups`)."""
    family = {i: (store.device_metadata(d) or {}).get("arch") for i, d in enumerate(sources)}
    return family_groups({**family, len(sources): target_arch}, list(range(len(sources))), len(sources))


def _few_shot(store, name, prep, t, budget, measure_target, measurable, zero_shot,
              zero_shot_scores) -> SelectorModel:
    """Time ``budget`` representative training inputs on the target (reusing recorded rows;
    picked among those recorded there or in ``measurable``, where given)
    and learn from them the few-shot model (:mod:`nitro.transfer.fewshot_model`: the
    ``zero_shot`` kernel model corrected, or boosted trees with the sources' rows from
    ``TREES_FROM`` inputs). The timed inputs also measure both models there: the zero-shot
    model's choices (from ``zero_shot_scores`` on the training inputs) and the few-shot model's
    by cross-validation. The few-shot model's provenance is the zero-shot model's, with ``few_shot``."""
    data = prep.data
    provenance = zero_shot.provenance
    target = data.devices[t]
    recorded = {r.input_id: r for r in store.rows(name, target)}
    pool = np.arange(len(prep.train))
    if measure_target is None:             # nothing to measure with: pick among the inputs recorded there
        pool = np.flatnonzero([data.inputs[i] in recorded for i in prep.train])
        if not len(pool):
            raise ValueError(f"{name}: a target budget needs the target's timings: {target} has none of the "
                             f"{len(prep.train)} training inputs recorded; use Autotuner.tune_from_source, which "
                             "measures them")
    elif measurable is not None:           # pick among the inputs that can be timed (or are recorded)
        can = set(recorded) | set(measurable)
        pool = np.flatnonzero([data.inputs[i] in can for i in prep.train])
        if not len(pool):
            raise ValueError(f"{name}: a target budget needs inputs to time on {target}: none of the sources' "
                             f"{len(prep.train)} training inputs is recorded there or among the "
                             f"{len(set(measurable))} inputs given to time (set_training_args with the sources' "
                             "inputs and their ids)")
    wanted = budget if isinstance(budget, int) else budget_count(budget, len(prep.train))
    if wanted > len(pool):
        warnings.warn(f"{name}: a target budget of {wanted} inputs, but {len(pool)} training inputs can be timed on "
                      f"{target}: all of them are", stacklevel=3)
    rows = pool[pick_inputs(prep.grid.X[pool], min(wanted, len(pool)))]
    picks = prep.train[rows]
    ids = [data.inputs[i] for i in picks]
    todo = [i for i in ids if i not in recorded]
    if todo:
        recorded.update({r.input_id: r for r in measure_target(todo)})
    times = np.array([recorded[i].time_vector(data.variants) for i in ids], dtype=np.float64)
    ok = np.isfinite(times).any(axis=1)
    if not ok.any():
        raise ValueError(f"{name}: no variant ran on the target for the {len(ids)} chosen inputs")
    zero = provenance["zero_shot_confidence"]
    if ok.sum() < TREES_FROM and zero["level"] in ("low", "uncertain"):
        warnings.warn(f"{name}: {int(ok.sum())} input(s) timed on {target} only correct the zero-shot model near "
                      f"them, and its estimate is {zero['level']} ({'; '.join(zero['low_because'])}): time {TREES_FROM} or more "
                      "so that the few-shot model can learn what no source shows", stacklevel=3)
    cols = prep.features
    model = fit_few_shot(zero_shot, data, prep.sources, prep.train, t, data.X[picks], times, cols)
    estimate = cross_validated_quality(zero_shot, data, prep.sources, prep.train, t, data.X[picks], times, cols)
    if estimate is not None:
        estimate["zero_shot_on_timed"] = fraction_of_optimum(times[ok], zero_shot_scores[rows][ok].argmax(axis=1))
        estimate.update(few_shot_verdict(estimate, int(ok.sum())))
        if estimate["level"] in ("low", "uncertain"):
            warnings.warn(f"{name}: on {target}, {estimate['advice']}", stacklevel=3)
    learner = "correction" if model.kind == "kernel" else "trees"     # the estimate's names (learner_for)
    provenance = {**provenance, "few_shot": {"inputs": [i for i, good in zip(ids, ok) if good],
                                             "learner": learner, "estimate": estimate}}
    if model.kind != "kernel":           # the trees hold the target's device features as constants: every one
        provenance.update(zero_shot_device_features=provenance["device_features"],     # known, the constant too
                          device_features=list(model.device_features), target_features=dict(model.device_features))
    model.provenance = {**model.provenance, **provenance}   # the correction's own: "refined"
    return model


def _fit_learner(store, name, learner, data, prep, t, used, features, provenance, save=True,
                 pending: list = ()) -> SelectorModel:
    from ..learn import fit_selector, make_selector
    learner = make_selector(learner) if isinstance(learner, str) else learner
    cols = [data.device_features.index(f) for f in used]
    X, times = stack_times(data, prep.sources, prep.train, cols)
    est = fit_selector(learner, X, times)
    target_values = {f: float(data.D[t, c]) for f, c in zip(used, cols)}
    check = _learner_check(est, prep, t, cols)
    if check["warning"]:
        warnings.warn(f"{name}: {check['warning']}", stacklevel=3)
    provenance.update(device_features=used, target_features=target_values, learner=type(est).__name__,
                      learner_check=check)
    model = SelectorModel.from_estimator(est, list(features), device_features=target_values,
                                         variants=list(data.variants), provenance=provenance)
    if save:
        _store_model(store, name, data.devices[t], model, pending)
    return model
