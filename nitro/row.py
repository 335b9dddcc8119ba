"""The training row: everything measured for one input on one device, as the store keeps it.

Its own module, standard library only, so that the store, the data sets and the refining mode's
writer read and write rows without the measuring side (NumPy, the CUDA helpers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence


@dataclass(slots=True)
class TrainingRow:
    """Everything measured for one input on one device (slots: a store read holds a million)."""

    input_id: str
    features: dict[str, float]
    times: dict[str, float | None]
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def best(self) -> str | None:
        """The fastest variant with a finite time (the first listed among equals), or None."""
        best, fastest = None, math.inf
        for v, t in self.times.items():
            if t is not None and -math.inf < t < fastest:
                best, fastest = v, t
        return best

    def over(self, stored: "TrainingRow | None") -> "TrainingRow":
        """This row written over ``stored`` (the same input's stored row, or None): each variant
        this row has no time or failure for keeps the stored one, so that what another process
        measured of the same input is not lost."""
        if stored is None:
            return self
        keep = [v for v in stored.times.keys() | stored.failed.keys()
                if self.times.get(v) is None and v not in self.failed]
        return TrainingRow(self.input_id, self.features, {**self.times, **{v: stored.times.get(v) for v in keep}},
                           {**self.failed, **{v: stored.failed[v] for v in keep if v in stored.failed}})

    def time_vector(self, variants: Sequence[str]) -> list[float]:
        """Seconds of each of ``variants``, NaN where it failed, was skipped or is unknown."""
        return [math.nan if self.times.get(v) is None else self.times[v] for v in variants]

    def to_dict(self) -> dict:
        return {"input": self.input_id, "features": self.features, "times": self.times,
                "failed": self.failed, "best": self.best}

    @classmethod
    def from_dict(cls, data: Mapping) -> "TrainingRow":
        """Validate a row read from a store or file (plain data only)."""
        try:
            input_id = data["input"]
            features = {str(k): float(v) for k, v in dict(data["features"]).items()}
            times = {str(k): (None if v is None else float(v)) for k, v in dict(data["times"]).items()}
            failed = {str(k): str(v) for k, v in dict(data.get("failed", {})).items()}
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"malformed training row: {exc!r}") from None
        if not isinstance(input_id, str) or not input_id:
            raise ValueError("malformed training row: 'input' must be a non-empty string")
        bad = [k for k, v in features.items() if not math.isfinite(v)] + \
              [k for k, v in times.items() if v is not None and not (math.isfinite(v) and v >= 0)]
        if bad:
            raise ValueError(f"malformed training row {input_id!r}: {bad} not finite (times: not negative)")
        return cls(input_id, features, times, failed)
