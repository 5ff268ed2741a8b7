"""A tensor as the manifest and `edgekit inspect` describe it: name, shape, dtype, layout and its affine int8
quantization (TensorSpec, QuantParams). Plain data that round-trips to JSON; part of every Artifact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class QuantParams:
    """Affine quantization of a tensor: real = (q - zero_point) * scale, per channel along AXIS when lists.

    JSON (manifest, inspect): {"scale": float | [float], "zero_point": int | [int]}, plus "axis" for
    per-channel parameters only, as since manifest v1.
    """

    scale: float | list[float]
    zero_point: int | list[int] = 0
    axis: int | None = None  # the quantized dimension, for per-channel parameters

    @property
    def per_channel(self) -> bool:
        return isinstance(self.scale, list)

    @classmethod
    def from_arrays(cls, scales: Any, zero_points: Any, axis: int = 0) -> QuantParams | None:
        """From the scale / zero-point arrays a runtime or flatbuffer holds; None where there are none."""
        s = [float(v) for v in np.asarray(scales if scales is not None else [], dtype=np.float64).ravel()]
        if not s:
            return None
        z = [int(v) for v in np.asarray(zero_points if zero_points is not None else [], dtype=np.int64).ravel()]
        if len(s) == 1:
            return cls(scale=s[0], zero_point=z[0] if z else 0)
        return cls(scale=s, zero_point=z or [0] * len(s), axis=int(axis))

    def arrays(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """Scale and zero point as float32 arrays that broadcast against a tensor of RANK dims."""
        scale = np.asarray(self.scale, dtype=np.float32)
        zp = np.asarray(self.zero_point, dtype=np.float32)
        if scale.size > 1 and rank > 0:  # per-channel: laid along the quantized axis (the last by default)
            shape = [1] * rank
            shape[self.axis if self.axis is not None else -1] = -1
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        return scale, zp

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"scale": self.scale, "zero_point": self.zero_point}
        if self.axis is not None:
            d["axis"] = self.axis
        return d

    @classmethod
    def read(cls, d: Any) -> QuantParams | None:
        """From a file's "quantization" value; None for null, an empty or a malformed one."""
        if not isinstance(d, dict) or d.get("scale") in (None, [], 0, 0.0):
            return None
        try:
            return cls.from_arrays(d["scale"], d.get("zero_point", 0), int(d.get("axis", -1)))
        except (TypeError, ValueError):
            return None


@dataclass
class TensorSpec:
    """One input or output: name, shape (-1 for a dynamic dim), dtype, layout, quantization."""

    name: str
    shape: list[int]
    dtype: str  # numpy dtype name: float32, float16, int8, uint8, int64 ...
    layout: str | None = None  # NCHW, NHWC, NC ... for 4-D images; None when unknown
    quantization: QuantParams | None = None  # for quantized (int8/uint8) tensors

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) and d > 0 for d in self.shape)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "layout": self.layout,
                "quantization": self.quantization.to_dict() if self.quantization is not None else None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TensorSpec:
        return cls(
            name=d["name"],
            shape=[int(x) for x in d["shape"]],
            dtype=d["dtype"],
            layout=d.get("layout"),
            quantization=QuantParams.read(d.get("quantization")),
        )
