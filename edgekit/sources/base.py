"""A loaded source model: what every conversion chain starts from and validates against."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from edgekit.artifact import SourceInfo


@dataclass
class LoadOptions:
    """What the user told us about the source (CLI flags), for the loaders."""

    factory: str | None = None  # "package.module:function" that builds the model (state_dict, Keras code)
    trust_model: bool = False  # allow formats whose loading runs arbitrary code (pickle, Lambda layers)
    input_shape: list[int] | None = None  # in the SOURCE's layout, batch first
    signature: str = "serving_default"  # SavedModel signature


@dataclass
class Source:
    """A source model, loaded.

    `family` is the first Intermediate kind of the conversion chain ("torch", "onnx", "keras",
    "savedmodel"); `predict` is the reference every artifact is validated against: a float32
    batch in the source's layout in, the first output as float32 out.
    """

    path: Path
    kind: str  # detected kind: torch-exported, torchscript, torch-state-dict, torch-pickle, onnx, keras, h5, savedmodel
    family: str
    layout: str  # layout of the 4-D image input: NCHW (PyTorch, most ONNX) or NHWC (Keras/TF)
    input_name: str
    input_shape: list[int]  # batch first; -1 where dynamic
    input_dtype: str
    predict: Callable[[np.ndarray], np.ndarray]
    model: Any = None  # the loaded object that the first step consumes
    sha256: str = ""
    output_names: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> SourceInfo:
        """The manifest's record of this source."""
        from edgekit.artifact import SourceInfo, SourceInput

        return SourceInfo(path=str(self.path), sha256=self.sha256, kind=self.kind, layout=self.layout,
                          input=SourceInput(name=self.input_name, shape=list(self.input_shape), dtype=self.input_dtype))
