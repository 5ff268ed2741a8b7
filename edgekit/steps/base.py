"""The Step contract: one conversion (or quantization) per class, declared inputs, one run method.

Modelled on Olive's passes: a small class with its parameters and a `run`; the table in
`edgekit.steps.STEPS` maps names to classes so a step's heavy imports happen only when it runs.
Step modules import nothing heavy at module level.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from edgekit.sources.base import Source


@dataclass
class Intermediate:
    """What flows between steps: a model in one form, on disk (path) and/or in memory (obj)."""

    kind: str  # "torch" | "keras" | "savedmodel" | "onnx" | "tflite" | "edgetpu"
    path: Path | None = None
    obj: Any = None
    layout: str = "NCHW"  # layout of the 4-D image input in this form
    precision: str = "fp32"
    # facts later steps or the manifest need: io_dtype, signature, edgetpu report, chain of step names
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class ConvertOptions:
    targets: list[str]
    precisions: list[str]
    out_dir: Path
    calib: str | None = None
    calib_size: int = 200
    val_size: int = 1000
    input_shape: list[int] | None = None
    batch: int = 1
    io_dtype: str | None = None  # int8 TFLite I/O: int8 | uint8 | float32
    mean: list[float] | None = None
    std: list[float] | None = None
    strict: bool = False
    force: bool = False
    factory: str | None = None
    trust_model: bool = False
    signature: str = "serving_default"
    opset: int = 18
    edgetpu_compiler: str | None = None
    edgetpu_min_runtime: str | None = None
    edgetpu_timeout: float = 180.0

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["out_dir"] = str(self.out_dir)
        return d


@dataclass
class StepContext:
    """What every step may use: a scratch folder, the run's options and the source."""

    work: Path  # staging folder; steps write only here
    stem: str
    source: Source
    options: ConvertOptions
    # calibration samples: float32, in the SOURCE's layout, batch first; raises UsageError when none
    calibration: Callable[[], np.ndarray]
    log: Callable[[str], None] = print

    def to_layout(self, x: np.ndarray, layout: str) -> np.ndarray:
        """Transpose a 4-D batch from the source's layout to LAYOUT."""
        return to_layout(x, self.source.layout, layout)


def to_layout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if x.ndim != 4 or src == dst:
        return x
    if (src, dst) == ("NCHW", "NHWC"):
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    if (src, dst) == ("NHWC", "NCHW"):
        return np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    raise ValueError(f"unknown layouts {src} -> {dst}")


class Step(ABC):
    """One conversion. Subclasses set name/consumes/produces/modules and implement run()."""

    name: ClassVar[str]
    consumes: ClassVar[str]
    produces: ClassVar[str]
    modules: ClassVar[tuple[str, ...]] = ()  # Python modules it imports; checked before anything runs

    def __init__(self, **params: Any) -> None:
        self.params = params

    def key(self) -> tuple[Any, ...]:
        """Identity for memoising: two chains sharing a prefix run that prefix once."""
        return (self.name, tuple(sorted((k, str(v)) for k, v in self.params.items())))

    def describe(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()) if v is not None)
        return f"{self.name}({args})" if args else self.name

    @abstractmethod
    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        """Convert INP into the next form, writing only under ctx.work."""
