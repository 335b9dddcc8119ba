"""The transformed arrays every cross-device method shares, computed once per split."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..learn.kron import TIME_WEIGHT, KronKRRGrid, fraction_targets, signed_log, time_weights
from ..learn.preprocessing import input_units
from .data import TransferData


def learnable(timed: np.ndarray) -> np.ndarray:
    """Per input, from ``timed`` (sources × inputs × variants: a time was taken), whether a
    cross-device model can learn from it: every source timed some variant (its fastest is
    known), and each variant was timed on every source or on none. A variant timed on no source
    there failed everywhere or is not allowed there (a constraint): a fraction of 0 of the
    optimum. One timed on some sources only leaves the input out: its failure on one device
    cannot be told apart from a time never taken (measured in :mod:`nitro.transfer.coverage`)."""
    timed = np.asarray(timed, dtype=bool)
    return timed.any(axis=2).all(axis=0) & (timed.all(axis=0) | ~timed.any(axis=0)).all(axis=1)


def shared_rows(data: TransferData, sources, train: np.ndarray,
                extra_devices=()) -> tuple[list[int], np.ndarray, list[int]]:
    """What every cross-device method shares before any kernel: the ``sources`` as device
    indices, the ``train`` inputs it can learn from (:func:`learnable`), and the device-feature
    columns known on every device involved (the sources and ``extra_devices``)."""
    sources = [data.device_index(s) if isinstance(s, str) else int(s) for s in sources]
    train = np.asarray(train)
    train = train[learnable(np.isfinite(data.times[np.ix_(sources, train)]))]
    if len(train) < 2:
        raise ValueError("fewer than two training inputs where every variant was timed on all sources or on none")
    involved = sources + [data.device_index(d) if isinstance(d, str) else int(d) for d in extra_devices]
    features = [j for j in range(len(data.device_features)) if np.isfinite(data.D[involved, j]).all()]
    return sources, train, features


@dataclass
class Prepared:
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
        Y[:, sources] = fraction_targets(times).transpose(1, 0, 2)
        weights = time_weights(times, time_weight) if time_weight else None
        return cls(data, sources, train, features, X, mean, scale, unit, signed_log(np.nan_to_num(data.D)),
                   KronKRRGrid(X[train], Y, n_components=n_components, max_centres=max_centres, weights=weights))

    def input_params(self) -> dict:
        """How an exported kernel model transforms its raw input features, as this did:
        ``signed_log``, ``mean``, ``scale`` and, where a feature is not taken in units of 1,
        ``unit`` (:func:`nitro.learn.preprocessing.input_units`)."""
        unit = {"unit": self.x_unit.tolist()} if (self.x_unit != 1.0).any() else {}
        return {"signed_log": True, "mean": self.x_mean.tolist(), "scale": self.x_scale.tolist(), **unit}
