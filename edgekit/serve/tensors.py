"""The model's tensors as the wire sees them, and the conversion between the two.

A client of a quantized model should not need its int8 scales: an input quantized in the model is
advertised as FP32 and quantized here with the model's own scale and zero point (NaN or inf there is
the client's error, not a silent clip); its raw dtype is accepted as well, as given. Outputs are
dequantized to FP32. A float model's tensors are advertised and taken in their own dtype, strictly,
as Triton does: no silent casts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from edgekit.core.artifact import TensorSpec
from edgekit.runtimes.base import dequantize, quantize
from edgekit.serve.errors import bad_request

# KServe v2 datatype strings <-> numpy dtypes (BYTES has no fixed-size dtype: no CNN here takes strings)
DATATYPES: dict[str, str] = {
    "BOOL": "bool", "UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64",
    "INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64",
    "FP16": "float16", "FP32": "float32", "FP64": "float64",
}
NUMPY_TO_DATATYPE = {v: k for k, v in DATATYPES.items()}
KNOWN_DATATYPES = (*DATATYPES, "BYTES", "BF16")


def datatype_of(dtype: str) -> str:
    """The v2 datatype string of a numpy dtype name."""
    return NUMPY_TO_DATATYPE.get(np.dtype(dtype).name, "BYTES")


@dataclass(frozen=True)
class WireTensor:
    """One model tensor as advertised: name, datatype, shape (-1 dynamic) and the model's own spec.

    NAME is the served name (the source's, edgekit.serve.names); SPEC.name the artifact's own tensor,
    which the runtime knows it by; ALIASES the other names a request may use for it."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    spec: TensorSpec
    aliases: tuple[str, ...] = ()

    @property
    def quantized(self) -> bool:
        return self.spec.quantization is not None and np.dtype(self.spec.dtype).kind in "iu"

    @property
    def accepted(self) -> tuple[str, ...]:
        """Datatypes a request may send: the advertised one, and the raw one of a quantized input."""
        raw = datatype_of(self.spec.dtype)
        return (self.datatype,) if raw == self.datatype else (self.datatype, raw)

    @classmethod
    def of(cls, spec: TensorSpec) -> WireTensor:
        quantized = spec.quantization is not None and np.dtype(spec.dtype).kind in "iu"
        return cls(name=spec.name, datatype="FP32" if quantized else datatype_of(spec.dtype),
                   shape=tuple(int(d) if d > 0 else -1 for d in spec.shape), spec=spec)

    def metadata(self) -> dict[str, object]:
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}

    def check_shape(self, shape: list[int], where: str) -> None:
        """400 unless SHAPE fits: same rank, every static dim equal, a dynamic batch >= 1."""
        if len(shape) != len(self.shape) or any(w > 0 and g != w for g, w in zip(shape, self.shape, strict=True)):
            raise bad_request(f"input '{self.name}' has shape {list(self.shape)} (-1: any size), got {shape}.",
                              f"{where}.shape")
        if any(g < 1 for g in shape):
            raise bad_request(f"input '{self.name}': every dimension must be at least 1, got {shape}.",
                              f"{where}.shape")

    def to_model(self, array: np.ndarray, datatype: str, where: str) -> np.ndarray:
        """ARRAY (of DATATYPE, one of `accepted`) in the model's dtype: quantized where the model is."""
        want = np.dtype(self.spec.dtype)
        if array.dtype == want:
            return array
        if self.quantized:
            if not np.isfinite(array).all():
                raise bad_request(f"input '{self.name}' holds NaN or infinite values; the model is quantized "
                                  f"({self.spec.dtype}) and they have no quantized value.", f"{where}.data")
            return quantize(array, self.spec)
        return array.astype(want)  # not reached for strict float inputs; kept for BOOL -> bool and the like

    def from_model(self, array: np.ndarray) -> np.ndarray:
        """A model output as sent: dequantized to float32 where quantized."""
        return dequantize(array, self.spec) if self.quantized else np.asarray(array)


def wire_tensors(specs: list[TensorSpec], names: dict[str, str] | None = None) -> list[WireTensor]:
    """SPECS as advertised, each under NAMES[its own name] (edgekit.serve.names) with its own as an alias."""
    from edgekit.serve.names import aliases

    out = []
    for s in specs:
        served = (names or {}).get(s.name, s.name)
        out.append(replace(WireTensor.of(s), name=served, aliases=aliases(s.name, served)))
    return out


def by_any_name(wires: list[WireTensor]) -> dict[str, WireTensor]:
    """Each of WIRES by its served name and by every alias no other tensor claims (served names win)."""
    claims: dict[str, list[WireTensor]] = {}
    for w in wires:
        for a in w.aliases:
            claims.setdefault(a, []).append(w)
    found = {a: ws[0] for a, ws in claims.items() if len(ws) == 1}
    found.update({w.name: w for w in wires})
    return found


__all__ = ["DATATYPES", "KNOWN_DATATYPES", "WireTensor", "by_any_name", "datatype_of", "wire_tensors"]
