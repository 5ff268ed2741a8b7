"""A new artifact FORMAT backed by a library edgekit does not use: weightpack's `.wpk` (tests/pipeline/weightpack_lib,
a library with its own file format, its own int8 weights and its own exception type), as a target, a format and a
runtime, with quantization.

The proof of README "Extending edgekit": everything edgekit must know of a new format is this file's two records,
FORMAT (how a file is recognised, the runtime that runs it, the library it drives: how its errors read, how it is
installed, whose version a manifest records, that it belongs on an Arm64 device; where serve ranks it and its
KServe platform; the writer of its tiny CNN for the runtimes' conformance suite) and TARGET (the precisions and
steps that make it), registered by the test that uses them; then it converts (fp32, and the int8 weights of
`dynamic`), validates, profiles, benches, is chosen by serve and gated by check with no other change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core.formats import FormatSpec, serve_ranks
from edgekit.core.tensors import TensorSpec
from edgekit.core.vendor import Vendor
from edgekit.runtimes.base import Runtime, input_array
from edgekit.steps import Intermediate, Step, StepContext
from edgekit.targets import TargetSpec
from edgekit.testing import tiny_cnn

# arm64: it belongs on a device (the emulated Pi's userland installs its extra's aarch64 wheels)
WEIGHTPACK = Vendor("weightpack", ("weightpack:PackError",), modules={"weightpack": "weightpack==0.3"},
                    extra="weightpack", arm64=True)


def is_wpk(path: str | Path) -> bool:
    import weightpack

    return Path(path).suffix == ".wpk" and bool(weightpack.is_pack(path))


class OnnxToWpk(Step):
    """fp32 ONNX -> .wpk, its weights int8 per channel for `dynamic`."""

    name: ClassVar[str] = "onnx_to_wpk"
    consumes: ClassVar[str] = "onnx"
    produces: ClassVar[str] = "wpk"
    modules: ClassVar[tuple[str, ...]] = ("weightpack",)

    def outputs(self, stem: str) -> list[str]:
        return [f"{stem}.{self.params.precision}.wpk"]

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        from edgekit.core._deps import require
        from edgekit.core.border import vendor_errors

        weightpack = require("weightpack", purpose="write weight packs")
        assert inp.path is not None
        out = ctx.work / self.outputs(ctx.stem)[0]
        with vendor_errors(WEIGHTPACK, step=self.name, what="Packing the weights failed"):
            weightpack.pack(inp.path, out, bits=8 if self.params.precision == "dynamic" else 32)
        return inp.derive(kind="wpk", path=out, precision=self.params.precision)


class WeightpackRuntime(Runtime):
    name: ClassVar[str] = "weightpack"
    # its library's record itself, not its key: validation runs it in a child process, where a format registered by
    # a test (not in edgekit's own table) is unknown
    vendor: ClassVar[Vendor] = WEIGHTPACK
    formats: ClassVar[tuple[str, ...]] = ("wpk",)

    @classmethod
    def version(cls) -> str | None:
        from edgekit.core._deps import version_of

        return version_of("weightpack")

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        from edgekit.core._deps import require

        self.session = require("weightpack", purpose="run weight packs").Session(path, threads)
        self.inputs = [TensorSpec(n, [int(d) if isinstance(d, int) else -1 for d in s], t)
                       for n, s, t in self.session.inputs]
        self.outputs = [TensorSpec(n, [int(d) if isinstance(d, int) else -1 for d in s], t)
                        for n, s, t in self.session.outputs]

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(self.session.run({s.name: input_array(inputs, s, self.inputs) for s in self.inputs}))


def write_tiny(out: Path, written: Mapping[str, Path]) -> dict[str, Path]:
    """The tiny CNN (edgekit.testing.tiny_cnn) as a weight pack, from its ONNX: what the runtimes' conformance
    suite runs the weightpack runtime on."""
    tiny_cnn.need("weightpack")
    import weightpack

    weightpack.pack(tiny_cnn.made_from(written, "onnx"), out / "tiny.wpk")
    return {"wpk-fp32": out / "tiny.wpk"}


TINY = tiny_cnn.TinyModels({"wpk-fp32": ("fp32", "NCHW")}, write_tiny)
FORMAT = FormatSpec("wpk", 8, "weightpack", ".wpk", sniff="wpk_format:is_wpk",
                    runtimes={"weightpack": "wpk_format:WeightpackRuntime"}, libraries={"weightpack": WEIGHTPACK},
                    serve=serve_ranks(cpu={"dynamic": 1, "fp32": 2}), platform="weightpack_wpk",
                    tiny_model="wpk_format:TINY")
TARGET = TargetSpec(name="wpk", help="weightpack's .wpk (a test target)", format="wpk",
                    steps=("wpk_format:OnnxToWpk",), precisions=("fp32", "dynamic"))
