"""The options of one conversion, declared once: the CLI, the Python API and the steps read this record.

Each field carries its help text, so `edgekit convert --help` and `edgekit.convert(**options)`
cannot drift apart; `manifest.json` records `to_dict()` (same keys since manifest v1).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from edgekit.errors import UsageError
from edgekit.registry import suggest

IoDtype = Literal["int8", "uint8", "float32"]  # the I/O type of a full-integer TFLite model
IO_DTYPES: tuple[str, ...] = get_args(IoDtype)


def _opt(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class ConvertOptions:
    """Every option of `edgekit convert`; defaults here are the CLI's defaults."""

    targets: list[str] = field(default_factory=lambda: ["onnx"], metadata={"help": "Targets (comma list)."})
    precisions: list[str] = field(default_factory=lambda: ["fp32"], metadata={"help": "Precisions (comma list)."})
    out_dir: Path | None = _opt(None, "Output folder (default edgekit-out/<stem>).")
    calib: str | None = _opt(None, "Calibration data: image folder, .npy/.npz, or 'mnist'.")
    calib_size: int = _opt(200, "Calibration samples to use.")
    val_size: int = _opt(1000, "Held-out samples to validate on (at most).")
    input_shape: list[int] | None = _opt(None, "Input shape, batch first, in the source's layout: 1,1,28,28.")
    batch: int = _opt(1, "Static batch for TFLite / Edge TPU artifacts.")
    io_dtype: IoDtype | None = _opt(None, "I/O type of int8 TFLite: int8 (default), uint8 (Edge TPU default) or "
                                    "float32.")
    mean: list[float] | None = _opt(None, "Per-channel mean for image calibration data, e.g. 0.5 or 0.485,0.456,0.406.")
    std: list[float] | None = _opt(None, "Per-channel std for image calibration data.")
    strict: bool = _opt(False, "Exit 5 when an artifact misses its fidelity thresholds.")
    force: bool = _opt(False, "Replace outputs of an earlier run.")
    factory: str | None = _opt(None, "package.module:factory that builds the network (for state_dict checkpoints "
                               "and Keras weights).")
    trust_model: bool = _opt(False, "Allow formats whose loading runs code (pickled modules, Lambda layers).")
    signature: str = _opt("serving_default", "SavedModel signature to convert.")
    layout: str | None = _opt(None, "Layout of an ONNX source's image input: NCHW or NHWC (default: read from the "
                              "graph; tf2onnx writes Keras models as NHWC).")
    opset: int = _opt(18, "ONNX opset of the PyTorch, Keras and TF exports.")
    edgetpu_compiler: str | None = _opt(None, "Path of edgetpu_compiler (default: found on PATH).")
    edgetpu_min_runtime: str | None = _opt(None, "edgetpu_compiler --min_runtime_version (an integer, e.g. 14).")
    edgetpu_timeout: float = _opt(180.0, "Seconds before the Edge TPU compiler is stopped.")
    int8_recipe: str = _opt("plain", "How int8 is made: plain, or auto (plain, then the recovery recipes until the "
                            "int8 thresholds are met: minutes on a real model), uint8, equalize, equalize+bias, bias, "
                            "percentile, mse, entropy, mixed.")
    explain: bool = _opt(False, "Diagnose every int8 artifact layer by layer (always done when one misses).")
    edgetpu_fixes: bool = _opt(True, "Edge TPU: rewrite ops the compiler cannot map (HARD_SWISH, a TRANSPOSE before "
                               "FULLY_CONNECTED, PADV2 after ReLU) into ones it can, before quantizing.")
    input_shapes: dict[str, list[int]] | None = _opt(None, "Shapes of a multi-input model's inputs by name "
                                                     "(--input-shape name:1,3,320,320, once per input).")
    output_kinds: dict[str, str] | None = _opt(None, "How an output is judged, by output name: classes, dense, "
                                               "sequence or regression (--output-kind name=kind); default from its "
                                               "shape.")

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["out_dir"] = str(self.out_dir) if self.out_dir is not None else None
        return d

    @classmethod
    def help(cls, name: str) -> str:
        return str(FIELDS[name].metadata["help"])

    @classmethod
    def default(cls, name: str) -> Any:
        f = FIELDS[name]
        return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default

    @classmethod
    def build(cls, **values: Any) -> ConvertOptions:
        """ConvertOptions from keyword values, with a did-you-mean for a mistyped name."""
        for key in values:
            if key not in FIELDS:
                guess = suggest(key, FIELDS)
                raise UsageError(f"convert() has no option '{key}'.",
                                 hint=(f"did you mean '{guess}'? " if guess else "") + f"Options: {', '.join(FIELDS)}.")
        return cls(**values)

    def check(self) -> None:
        """Range checks on plain numbers (names of targets, precisions, ... are checked by the planner)."""
        if self.batch < 1:
            raise UsageError(f"--batch must be at least 1, got {self.batch}.")
        if self.calib_size < 1 or self.val_size < 1:
            raise UsageError("--calib-size and --val-size must be at least 1.")
        if self.edgetpu_timeout <= 0:
            raise UsageError(f"--edgetpu-timeout must be above 0 seconds, got {self.edgetpu_timeout:g}.")
        from edgekit.sources.onnx_layout import check_layout

        self.layout = check_layout(self.layout)
        if self.output_kinds:
            from edgekit.fidelity.kinds import check_kind

            self.output_kinds = {str(k): check_kind(str(v)) for k, v in self.output_kinds.items()}


FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(ConvertOptions)}

__all__ = ["FIELDS", "IO_DTYPES", "ConvertOptions", "IoDtype"]
