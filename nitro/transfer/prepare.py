"""The transformed arrays every cross-device method shares, computed once per split."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..learn.kron import TIME_WEIGHT, KronKRRGrid, fraction_targets, signed_log, time_weights
from ..learn.preprocessing import input_units
from .data import TransferData


COMMON_SHARE = 0.5     # below this share of the inputs some source timed, those every source timed are few
FILL_NEIGHBOURS = 5    # a source's inputs nearest an input it did not time, whose fractions fill it in


def learnable(timed: np.ndarray, some: bool = False) -> np.ndarray:
    """Per input, from ``timed`` (sources × inputs × variants: a time was taken), whether a
    cross-device model can learn from it: every source timed some variant (its fastest is
    known), and each variant was timed on every source or on none. A variant timed on no source
    there failed everywhere or is not allowed there (a constraint): a fraction of 0 of the
    optimum. One timed on some sources only leaves the input out: its failure on one device
    cannot be told apart from a time never taken (measured in :mod:`nitro.transfer.coverage`).
    ``some``: at least one source timed some variant, and the rule holds over those that did
    (the others' fractions are filled in, :meth:`Prepared.build`)."""
    timed = np.asarray(timed, dtype=bool)
    ran = timed.any(axis=2)
    every = (timed | ~ran[:, :, None]).all(axis=0) if some else timed.all(axis=0)
    return (ran.any(axis=0) if some else ran.all(axis=0)) & (every | ~timed.any(axis=0)).all(axis=1)


def shared_rows(data: TransferData, sources, train: np.ndarray,
                extra_devices=()) -> tuple[list[int], np.ndarray, list[int]]:
    """What every cross-device method shares before any kernel: the ``sources`` as device
    indices, the ``train`` inputs it can learn from (:func:`learnable`), and the device-feature
    columns known on every device involved (the sources and ``extra_devices``). Where the
    inputs every source timed are fewer than ``COMMON_SHARE`` of those some source timed
    (sources that recorded different inputs), the latter: :meth:`Prepared.build` fills in the
    rest."""
    sources = [data.device_index(s) if isinstance(s, str) else int(s) for s in sources]
    train = np.asarray(train)
    timed = np.isfinite(data.times[np.ix_(sources, train)])
    every, some = learnable(timed), learnable(timed, some=True)
    train = train[every if every.sum() >= COMMON_SHARE * some.sum() else some]
    if len(train) < 2:
        raise ValueError("fewer than two training inputs where every variant was timed on all sources or on none")
    involved = sources + [data.device_index(d) if isinstance(d, str) else int(d) for d in extra_devices]
    features = [j for j in range(len(data.device_features)) if np.isfinite(data.D[involved, j]).all()]
    return sources, train, features


def fill_in(fractions: np.ndarray, X: np.ndarray, ran: np.ndarray) -> np.ndarray:
    """``fractions`` (sources × inputs × variants) where each source's rows it did not run
    (``ran`` False) take the distance-weighted mean of its ``FILL_NEIGHBOURS`` nearest inputs it
    ran, in the transformed input features ``X``: the Kronecker model needs a value for every
    source and input. Measured on the SpMV data with each GPU's own half of the matrices, the
    full-set model went from 83.6% of the optimum (11 common inputs) to 94.3 (full data 93.9)."""
    from sklearn.neighbors import KNeighborsRegressor
    out = fractions.copy()
    for k in np.flatnonzero(~ran.all(axis=1)):
        knn = KNeighborsRegressor(n_neighbors=min(FILL_NEIGHBOURS, int(ran[k].sum())), weights="distance")
        out[k, ~ran[k]] = knn.fit(X[ran[k]], fractions[k, ran[k]]).predict(X[~ran[k]])
    return out


@dataclass
class Prepared:
    """Everything a cross-device fit over ``sources`` reuses: the learnable training inputs, the
    standardised input features, the signed-log device features and the kernel grid (built once
    by :meth:`build`, shared by CV-DFS, the fit, tune_from_source and nitro evaluate)."""

    data: TransferData
    sources: list[int]            # device indices usable as sources
    train: np.ndarray             # input indices a model can learn from on the sources (learnable)
    features: list[int]           # device-feature columns known on every device involved
    X: np.ndarray                 # transformed, standardised input features of ALL inputs
    x_mean: np.ndarray
    x_scale: np.ndarray
    x_unit: np.ndarray            # each input feature's unit before the signed log (preprocessing.input_units)
    D: np.ndarray                 # signed-log device features (all devices, all columns)
    grid: KronKRRGrid
    ran: dict                     # per source, which training inputs it timed (the others are filled in)
    filled_labels: dict           # per source, its fastest variant per training input, filled in where not timed
    searched: dict = field(default_factory=dict, repr=False)   # CV-DFS's score matrices by search settings
    held_out_svm: dict = field(default_factory=dict, repr=False)   # the full-set SVM's choices per held-out source, by grouping

    def labels(self, source: int) -> np.ndarray:
        """``source``'s fastest variant on each training input: measured where it timed the
        input, its filled-in fractions' best elsewhere."""
        return np.where(self.ran[source], self.data.labels(source, self.train), self.filled_labels[source])

    @classmethod
    def build(cls, data: TransferData, sources, train: np.ndarray, extra_devices=(),
              n_components: int | str | None = "auto", max_centres: int | str | None = "auto",
              time_weight: float = TIME_WEIGHT) -> "Prepared":
        """Arrays for ``sources`` on those of the training inputs ``train`` they can learn from;
        ``n_components``: the input kernel's basis, ``max_centres``: the bound on the exported
        expansion (:class:`~nitro.learn.kron.KronKRRGrid`); ``time_weight``: the power of the
        inputs' times in their weights (:func:`~nitro.learn.kron.time_weights`, 0: all alike)."""
        sources, train, features = shared_rows(data, sources, train, extra_devices)
        unit = input_units(data.X[train])
        Xl = signed_log(data.X * (1.0 / unit))
        mean = Xl[train].mean(axis=0)
        scale = Xl[train].std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        X = (Xl - mean) / scale
        Y = np.zeros((len(train), len(data.devices), len(data.variants)))
        times = data.times[sources][:, train]
        ran = np.isfinite(times).any(axis=2)
        with np.errstate(invalid="ignore"):     # a source's untimed rows (inf / inf): filled in below
            fractions = fraction_targets(times)
        if not ran.all():                  # sources that timed different inputs
            fractions = fill_in(fractions, X[train], ran)
        Y[:, sources] = fractions.transpose(1, 0, 2)
        weights = time_weights(times, time_weight) if time_weight else None
        return cls(data, sources, train, features, X, mean, scale, unit, signed_log(np.nan_to_num(data.D)),
                   KronKRRGrid(X[train], Y, n_components=n_components, max_centres=max_centres, weights=weights),
                   dict(zip(sources, ran)), dict(zip(sources, fractions.argmax(axis=2))))

    def input_params(self) -> dict:
        """How an exported kernel model transforms its raw input features, as this did:
        ``signed_log``, ``mean``, ``scale`` and, where a feature is not taken in units of 1,
        ``unit`` (:func:`nitro.learn.preprocessing.input_units`)."""
        unit = {"unit": self.x_unit.tolist()} if (self.x_unit != 1.0).any() else {}
        return {"signed_log": True, "mean": self.x_mean.tolist(), "scale": self.x_scale.tolist(), **unit}
