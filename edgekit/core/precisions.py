"""The numeric precisions edgekit converts to: one `PrecisionSpec` each, read by everything else.

The planner (which precisions exist, which need calibration), validation (the default fidelity
thresholds), profile (recognising a precision from a file name), bench and the CLI help all read
this table; adding a precision is one entry here plus the steps that can produce it.
Plain data: importing this module imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from edgekit.core.registry import check_choice

IoDtype = Literal["int8", "uint8", "float32"]  # the I/O type of a full-integer TFLite model (--io-dtype)


@dataclass(frozen=True)
class PrecisionSpec:
    """One precision: its name, table order, validation thresholds and the spellings that mean it."""

    name: str
    order: int  # position in tables (fp32 first)
    help: str
    # Default fidelity thresholds (documented in docs/fidelity.md, "Validation and the default thresholds").
    # accuracy_drop is in fraction points (0.01 = 1 point) below the source model's accuracy.
    thresholds: Mapping[str, float] = field(default_factory=dict)
    needs_calibration: bool = False  # representative data is required (never random data)
    # Other spellings users type and other tools write in file names (float16, full_integer_quant ...)
    aliases: tuple[str, ...] = ()

    @property
    def tokens(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


def _spec(name: str, order: int, help: str, thresholds: dict[str, float], *, needs_calibration: bool = False,
          aliases: tuple[str, ...] = ()) -> PrecisionSpec:
    return PrecisionSpec(name, order, help, MappingProxyType(thresholds), needs_calibration=needs_calibration,
                         aliases=aliases)


PRECISIONS: dict[str, PrecisionSpec] = {
    p.name: p
    for p in (
        _spec("fp32", 0, "float32, as the source", {"top1_agreement": 0.99, "cosine": 0.9999},
              aliases=("float32",)),
        _spec("fp16", 1, "float16 weights, float32 I/O", {"top1_agreement": 0.99, "cosine": 0.999},
              aliases=("float16",)),
        _spec("dynamic", 2, "int8 weights, float activations (no calibration)",
              {"top1_agreement": 0.98, "cosine": 0.995}, aliases=("dynamic_range_quant",)),
        _spec("int8", 3, "full integer, calibrated", {"top1_agreement": 0.97, "cosine": 0.98, "accuracy_drop": 0.01},
              needs_calibration=True, aliases=("uint8", "full_integer_quant", "integer_quant")),
        # int8 weights, int16 activations (TFLite's 16x8 mode, ONNX QDQ with 16-bit activations): about int8's size,
        # 256x finer activations, so near lossless; the runtimes on CPUs have no int16 kernels to speed it up
        # (docs/convert.md "w8a16"). Float I/O: it takes the arrays the fp32 artifact takes.
        _spec("w8a16", 4, "int8 weights, int16 activations, calibrated (float I/O)",
              {"top1_agreement": 0.99, "cosine": 0.995, "accuracy_drop": 0.005}, needs_calibration=True,
              aliases=("16x8", "int16x8", "a16w8", "static_wi8_ai16", "wi8_ai16")),
    )
}
PRECISION_NAMES: tuple[str, ...] = tuple(PRECISIONS)


def get_precision(name: str) -> PrecisionSpec:
    """The spec of NAME (or one of its aliases); UsageError with a suggestion for a typo."""
    found = precision_from_token(name.strip().lower())
    if found is not None:
        return PRECISIONS[found]
    return PRECISIONS[check_choice(name, PRECISION_NAMES, "precision")]


def precision_from_token(token: str) -> str | None:
    """The precision a name or alias (as found in a file name) stands for, or None."""
    for spec in PRECISIONS.values():
        if token in spec.tokens:
            return spec.name
    return None


def order(name: str | None) -> int:
    """Table position of precision NAME (unknown names last)."""
    spec = PRECISIONS.get(name or "")
    return spec.order if spec else len(PRECISIONS)


def thresholds(name: str) -> dict[str, float]:
    """A fresh copy of the default fidelity thresholds of NAME (fp32's for an unknown one)."""
    return dict((PRECISIONS.get(name) or PRECISIONS["fp32"]).thresholds)


def cli_help() -> str:
    return ", ".join(PRECISION_NAMES)


__all__ = ["IoDtype", "PRECISIONS", "PRECISION_NAMES", "PrecisionSpec", "cli_help", "get_precision", "order",
           "precision_from_token", "thresholds"]
