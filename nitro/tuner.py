"""``autotuner``: measures variants on training inputs, records them, and trains models."""
from __future__ import annotations

import hashlib
from typing import Any, Iterable, Sequence

import numpy as np
from sklearn.base import clone
from tqdm.auto import tqdm

from . import devices as devices_mod
from .dispatch import feature_vector
from .learn import SVMSelector, fit_selector, make_selector
from .measurement import TimingPolicy, TrainingRow, measure_variants
from .model import SelectorModel
from .store import Store
from .variant import CodeVariant


def input_id(args: tuple) -> str:
    """A stable id for one input: the content hash of its arrays and values."""
    h = hashlib.sha1()
    for a in args:
        if isinstance(a, np.ndarray):
            h.update(str((a.dtype.str, a.shape)).encode())
            h.update(np.ascontiguousarray(a).view(np.uint8).data)
        elif isinstance(a, (str, int, float, bool, bytes)) or a is None:
            h.update(repr(a).encode())
        elif hasattr(a, "input_id"):
            h.update(str(a.input_id).encode())
        else:
            raise TypeError(f"cannot derive an input id from {type(a).__name__}: pass ids= to set_training_args")
    return h.hexdigest()[:16]


class Autotuner:
    """Tunes code variants of one computation (the paper's ``autotuner``)."""

    def __init__(self, name: str, store: Store | str | None = None, policy: TimingPolicy | None = None,
                 learner=None, progress: bool = True):
        self.name = name
        self._store = store
        self.policy = policy or TimingPolicy()
        # a learner instance or a selector name (nitro.learn.SELECTORS); time learners
        # (``fits_times = True``) are fitted on the time matrix, others on best-variant labels
        self.learner_given = learner is not None
        self.learner = make_selector(learner) if isinstance(learner, str) else (
            learner if learner is not None else SVMSelector())
        self.progress = progress
        self.training_args: list[tuple] = []
        self.training_ids: list[str] = []

    @property
    def store(self) -> Store:
        if not isinstance(self._store, Store):
            self._store = Store(self._store)
        return self._store

    def set_training_args(self, inputs: Iterable[Any], ids: Iterable[str] | None = None):
        """Training inputs: each item is the argument tuple of one call (a non-tuple item is
        a single argument). ``ids`` name them in the store (content hashes otherwise)."""
        args = [x if isinstance(x, tuple) else (x,) for x in inputs]
        if not args:
            raise ValueError("set_training_args: no training inputs given")
        ids = [str(i) for i in ids] if ids is not None else [input_id(a) for a in args]
        if len(ids) != len(args):
            raise ValueError(f"set_training_args: {len(args)} inputs but {len(ids)} ids")
        if len(set(ids)) != len(ids):
            raise ValueError("set_training_args: input ids are not unique (duplicate inputs?)")
        self.training_args, self.training_ids = args, ids

    # -- measurement ---------------------------------------------------------------------------
    def measure(self, cv: CodeVariant, remeasure: bool = False) -> list[TrainingRow]:
        """Exhaustively time every variant on every training input (resuming: inputs already
        recorded for this device are read back, not re-measured)."""
        if not self.training_args:
            raise ValueError(f"{self.name}: call set_training_args before tuning")
        device = cv.device_id or devices_mod.current_device_id()
        recorded: dict[str, TrainingRow] = {}
        if cv.record:
            self.store.declare(cv.name, cv.variant_names, cv.feature_names)
            if self.store.device(device, missing_ok=True) is None:
                self.store.put_device(device, devices_mod.describe())
            if not remeasure:
                recorded = {r.input_id: r for r in self.store.rows(cv.name, device)}
        rows = []
        todo = [(i, a) for i, a in zip(self.training_ids, self.training_args) if i not in recorded]
        rows.extend(recorded[i] for i in self.training_ids if i in recorded)
        for iid, args in tqdm(todo, desc=f"measuring {cv.name}", unit="input", disable=not self.progress):
            feats = feature_vector(cv.feature_names, cv.compute_features(*args), f"{cv.name}, input {iid}: ")
            reference = cv.reference(*args) if cv.reference is not None else None
            times, failed = measure_variants(cv.variants, args, reference=reference,
                                             reference_variant=cv.default, check=cv.check,
                                             allowed=cv.allowed(feats), policy=self.policy)
            row = TrainingRow(iid, dict(zip(cv.feature_names, feats)), times, failed)
            if cv.record:
                self.store.put_row(cv.name, device, row)
            rows.append(row)
        return rows

    # -- on-device tuning -------------------------------------------------------------------------
    def tune(self, variants: Sequence[CodeVariant], remeasure: bool = False) -> list[SelectorModel]:
        """Measure, label each input with its fastest valid variant, train, and install the
        model on each code variant (and in the store when ``record`` is set)."""
        models = []
        for cv in variants:
            rows = self.measure(cv, remeasure=remeasure)
            model = self.fit_rows(cv, rows)
            cv.model = model
            if cv.record:
                self.store.put_model(cv.name, cv.device_id or devices_mod.current_device_id(), model.to_dict())
            models.append(model)
        return models

    def fit_rows(self, cv: CodeVariant, rows: Sequence[TrainingRow]) -> SelectorModel:
        labelled = [r for r in rows if r.best is not None]
        if not labelled:
            raise ValueError(f"{cv.name}: no training input has a valid variant to learn from")
        X = np.array([[r.features[f] for f in cv.feature_names] for r in labelled])
        if getattr(self.learner, "fits_times", False):
            times = np.array([[np.nan if r.times.get(v) is None else r.times[v] for v in cv.variant_names]
                              for r in labelled], dtype=np.float64)
            est = fit_selector(self.learner, X, times)
            variants = cv.variant_names
        else:
            est = clone(self.learner).fit(X, np.array([r.best for r in labelled]))
            variants = None
        device = cv.device_id or devices_mod.current_device_id()
        return SelectorModel.from_estimator(est, cv.feature_names, variants=variants, provenance={
            "method": "on-device", "device": device, "n_inputs": len(labelled),
            "learner": type(est).__name__, "params": {k: str(v) for k, v in getattr(est, "best_params_", {}).items()}})

    # -- cross-device tuning ----------------------------------------------------------------------
    def tune_from_source(self, variants: Sequence[CodeVariant], **kwargs) -> list[SelectorModel]:
        """Build each code variant's model for this (or ``target=``) device from the source
        devices' data in the store, without measuring here (the paper's Listing 2). Keyword
        arguments: ``sources``, ``target``, ``target_features``, ``profiling_based_dfs``,
        ``search_based_dfs``, ``k``, ``max_subset_size``, ``selection``, ``n_jobs``
        (see :func:`nitro.transfer.tune.tune_from_source`)."""
        from .transfer.tune import tune_from_source
        kwargs.setdefault("progress", self.progress)
        if self.learner_given:
            kwargs.setdefault("learner", self.learner)
        models = []
        for cv in variants:
            options = {"target": cv.device_id, "profiling_based_dfs": cv.profiling_based_dfs,
                       "search_based_dfs": cv.search_based_dfs, **kwargs}
            cv.model = tune_from_source(self.store, cv.name, cv.variant_names, cv.feature_names, **options)
            models.append(cv.model)
        return models

    def load_model(self, cv: CodeVariant, device_id: str | None = None) -> SelectorModel:
        """Install the stored model of ``cv`` for ``device_id`` (this device by default)."""
        device = device_id or cv.device_id or devices_mod.current_device_id()
        data = self.store.model(cv.name, device)
        if data is None:
            raise LookupError(f"the store has no model of {cv.name!r} for device {device!r}")
        cv.model = SelectorModel.from_dict(data)
        return cv.model


def autotuner(name: str, **kwargs) -> Autotuner:
    return Autotuner(name, **kwargs)
