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
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

import numpy as np

from edgekit.core.layout import to_layout

if TYPE_CHECKING:
    from edgekit.conversion.options import ConvertOptions
    from edgekit.core.precisions import IoDtype
    from edgekit.sources.base import Source


BatchSize = int | Literal["dynamic"]


class PostReport(Protocol):
    """What a post-step reports about the artifact it worked on: a record execute completes, then serializes.

    HOW_TO_FINISH is set by execute where the post-step could not run here (it needs the published path,
    which only execute knows), before `to_dict()` is called: nothing edits the manifest's dict afterwards.
    """

    how_to_finish: str | None

    def to_dict(self) -> dict[str, Any]: ...


@dataclass
class Intermediate:
    """What flows between steps: a model in one form, on disk (path) and/or in memory (obj).

    Every fact a later step or the manifest needs is a typed field here (no free-form dict), so a
    step's output is checked by the type checker and by the tests alike.
    """

    kind: str  # "torch" | "keras" | "savedmodel" | "onnx" | "tflite" | "edgetpu": a form, routed by CONVERSIONS
    path: Path | None = None
    obj: Any = None
    layout: str = "NCHW"  # layout of the 4-D image input in this form
    precision: str = "fp32"  # a key of edgekit.core.precisions.PRECISIONS
    io_dtype: IoDtype | None = None  # the TFLite model's I/O type
    signature: str | None = None  # SavedModel signature the next step reads
    batch: BatchSize | None = None  # the batch the form was traced at, "dynamic" where left free
    input_name: str | None = None
    exporter: Literal["dynamo", "torchscript"] | None = None  # which torch.onnx exporter wrote it
    opset: int | None = None
    dynamic_shape_ops: list[str] = field(default_factory=list)  # SHAPE/PACK ... left in a .tflite
    # A post-step's report about the artifact it worked on, recorded as artifact.extra[report_key]: a typed
    # record, completed before execute serializes it (edgekit.edgetpu.records.EdgeTpuReport)
    report: PostReport | None = None
    report_key: str | None = None
    # Files written beside the output and published with it: role -> path ("compiler_log": ...)
    side_files: dict[str, Path] = field(default_factory=dict)
    # How an int8 model was made (edgekit.quantize.records.RecipeChoice): manifest `extra.int8_recipe`
    quantization: Any = None

    def derive(self, **changes: Any) -> Intermediate:
        """A copy that carries every fact forward, with CHANGES; the in-memory model and reports stay behind."""
        keep = {k: v for k, v in self.__dict__.items() if k not in ("obj", "report", "report_key", "side_files")}
        keep["dynamic_shape_ops"] = list(self.dynamic_shape_ops)
        return Intermediate(**{**keep, **changes})

    def manifest_facts(self) -> dict[str, Any]:
        """The facts recorded in the artifact's manifest entry (`extra`): the keys manifest v1 has."""
        facts: dict[str, Any] = {}
        if self.io_dtype is not None:
            facts["io_dtype"] = self.io_dtype
        if self.dynamic_shape_ops:
            facts["dynamic_shape_ops"] = list(self.dynamic_shape_ops)
        if self.exporter is not None:
            facts["exporter"] = self.exporter
        if self.opset is not None:
            facts["opset"] = self.opset
        if self.quantization is not None:
            facts["int8_recipe"] = self.quantization.to_dict()
        return facts


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
    # several inputs: every input's calibration samples by the source's input names (calibration() is the first's)
    calibration_feeds: Callable[[], dict[str, np.ndarray]] | None = None

    def calibration_by_name(self) -> dict[str, np.ndarray]:
        """Every input's calibration samples by the source's input name (one entry for a one-input model)."""
        if self.calibration_feeds is not None:
            return self.calibration_feeds()
        return {self.source.input_name: self.calibration()}

    def to_layout(self, x: np.ndarray, layout: str) -> np.ndarray:
        """Transpose a 4-D batch from the source's layout to LAYOUT."""
        return to_layout(x, self.source.layout, layout)


@dataclass(frozen=True)
class StepParams:
    """What a step in a chain is asked to make: typed, hashable (part of the memo key), one shape for all.

    Route steps (torch_to_onnx, onnx_to_savedmodel ...) run with the defaults, so chains that share
    a route share those steps; a target's own steps get the chain's precision and I/O type.
    """

    precision: str = "fp32"
    io_dtype: IoDtype | None = None  # int8 TFLite I/O; None where the step has no choice
    integer_only: bool | None = None  # True: int8 recovery may not leave layers in float (Edge TPU)


class Step(ABC):
    """One conversion. Subclasses set name/consumes/produces/modules and implement run().

    Optional hooks, all with defaults: `outputs(stem)` names the files the step publishes (so the
    planner refuses to overwrite them before anything runs), `check_options(options)` rejects
    option values before anything runs, `how_to_finish(...)` explains how to finish a post-step
    that could not run here (the Edge TPU compiler).
    """

    name: ClassVar[str]
    consumes: ClassVar[str]
    produces: ClassVar[str]
    modules: ClassVar[tuple[str, ...]] = ()  # Python modules it imports; checked before anything runs

    def __init__(self, params: StepParams | None = None) -> None:
        self.params = params or StepParams()
        self._shown = params is not None  # a target's own step says what it makes in the plan

    def key(self) -> tuple[Any, ...]:
        """Identity for memoising: two chains sharing a prefix run that prefix once."""
        return (self.name, self.params)

    def describe(self) -> str:
        if not self._shown:
            return self.name
        args = ", ".join(f"{k}={v}" for k, v in sorted(self.params.__dict__.items()) if v is not None)
        return f"{self.name}({args})"

    def outputs(self, stem: str) -> list[str]:
        """File names this step writes for publication (its artifact first), given the run's STEM."""
        return []

    @classmethod
    def check_options(cls, options: ConvertOptions) -> None:
        """Raise UsageError for an option value this step cannot use; called before any step runs."""
        return None

    def how_to_finish(self, published_input: str, options: ConvertOptions) -> str:
        """How to finish this step elsewhere when it could not run here (its output's path is None)."""
        return f"The {self.name} step could not run here."

    @abstractmethod
    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        """Convert INP into the next form, writing only under ctx.work."""
