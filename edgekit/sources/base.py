"""A loaded source model (`Source`), what the user said about it (`LoadOptions`), and how a kind of
source file is recognised and read (`SourceSpec`, one per source module, listed in edgekit.sources.SOURCES).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from edgekit.core.artifact import SourceInfo


@dataclass
class LoadOptions:
    """What the user told us about the source (CLI flags), for the loaders."""

    factory: str | None = None  # "package.module:function" that builds the model (state_dict, Keras code)
    trust_model: bool = False  # allow formats whose loading runs arbitrary code (pickle, Lambda layers)
    input_shape: list[int] | None = None  # in the SOURCE's layout, batch first
    signature: str = "serving_default"  # SavedModel signature
    layout: str | None = None  # --layout: NCHW or NHWC for an ONNX source's 4-D input (None: read from the graph)
    input_shapes: dict[str, list[int]] | None = None  # per input name (multi-input ONNX: --input-shape name:dims)
    min_opset: int | None = None  # an ONNX source below it is raised to it first (int8 per-channel QDQ needs 13)
    reparameterize: bool = False  # fuse a torch module's branches before export (edgekit.sources.torch_reparam)


@dataclass
class Source:
    """A source model, loaded.

    `family` is the first Intermediate kind of the conversion chain ("torch", "onnx", "keras",
    "savedmodel"); `path` is the file its first step reads; `predict` is the reference every artifact
    is validated against: a float32 batch in the source's layout in, the first output as float32 out.
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
    signature: str | None = None  # the SavedModel signature the conversion reads (SavedModel sources)
    # what a loader keeps for its own runtime or clean-up (the torch module, a work folder); no other module reads it
    extra: dict[str, Any] = field(default_factory=dict)
    # The file the user named, where PATH is a copy its loader made to read (a decompressed archive in a
    # folder the loader owns): the manifest records this one, and SHA256 is its digest.
    origin: Path | None = None
    # Every output by name on a batch (source input name -> array), for validating every output (issue 15);
    # None where the loader gives `predict` alone: one output, named output_names[0] (or "output").
    predict_outputs: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None = None
    # Every input as (name, shape, dtype) where there are several; the first is input_name/input_shape
    inputs: list[tuple[str, list[int], str]] = field(default_factory=list)
    # What the loader changed in its own copy of the file before any step (dims pinned, opset raised)
    changes: list[str] = field(default_factory=list)
    # The model's own key/value metadata (ONNX metadata_props: Ultralytics writes task, names, imgsz, stride)
    metadata: dict[str, str] = field(default_factory=dict)

    def run_outputs(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every output of the source by name on FEEDS (input name -> batch in the source's layout)."""
        if self.predict_outputs is not None:
            return self.predict_outputs(feeds)
        x = feeds[self.input_name] if self.input_name in feeds else next(iter(feeds.values()))
        return {(self.output_names or ["output"])[0]: self.predict(x)}

    def describe(self) -> SourceInfo:
        """The manifest's record of this source."""
        from edgekit.core.artifact import SourceInfo, SourceInput

        return SourceInfo(path=str(self.origin or self.path), sha256=self.sha256, kind=self.kind, layout=self.layout,
                          input=SourceInput(name=self.input_name, shape=list(self.input_shape), dtype=self.input_dtype),
                          inputs=[SourceInput(name=n, shape=list(s), dtype=d) for n, s, d in self.inputs],
                          outputs=list(self.output_names), changes=list(self.changes))


# (path, its first bytes) -> the kind of source file it is, or None: "not mine". HEAD is the file's first
# SNIFF_BYTES bytes, or b"" for a folder.
Sniff = Callable[[Path, bytes], str | None]
# (path, None for a --model factory alone; options; the detected kind) -> the loaded Source
Loader = Callable[[Path | None, LoadOptions, str], Source]


@dataclass(frozen=True)
class SourceSpec:
    """Everything edgekit knows about one kind of source file, as data: the one entry a new source adds.

    A source module ends with `SOURCE = SourceSpec(...)`, and one line of edgekit.sources.SOURCES
    names it. Detection (edgekit.sources.detect) asks each spec's `sniff` in table order and takes
    the first kind claimed; the probe and `edgekit convert` then call that spec's `load`.

    name: its SOURCES key (messages say "the <name> loader").
    family: the first Intermediate kind of its conversion chains (torch, onnx, keras, savedmodel):
        what the planner routes from.
    kinds: every kind its sniff returns, plus "<family>-factory" where its loader builds a --model
        factory alone; a kind belongs to one spec only.
    sniff: cheap and byte-level (a few bytes, a zip's name list; never a full parse, never torch or
        TensorFlow); may raise UnsupportedModel for a file that is plainly its kind but unreadable.
    load: reads the file (the full parse and its vendor errors happen here, inside the border).
    files: how the "Supported: ..." hint names its files (".onnx", "SavedModel folders").
    dists: the distributions its loader reads with: a probe that passed is remembered per their versions.
    """

    name: str
    family: str
    kinds: tuple[str, ...]
    sniff: Sniff
    load: Loader
    files: str
    dists: tuple[str, ...] = ()
