"""PyTorch -> ONNX fp32, a single file (no external data), batch dynamic where the model allows it."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any, ClassVar

from edgekit._deps import require
from edgekit.errors import ConversionError
from edgekit.steps.base import Intermediate, Step, StepContext

_OP_PATTERNS = (
    re.compile(r"op='(aten\.[\w.]+)'"),
    re.compile(r"target=torch\.ops\.(aten\.[\w.]+)"),
    re.compile(r"(aten::\w+)"),
    re.compile(r"Exporting the operator '?([\w:.]+)'? to ONNX"),
)


def explain(exc: BaseException) -> str:
    """The unsupported op (searched through the exception chain) and the exporter's first line."""
    texts, seen = [], 0
    cur: BaseException | None = exc
    while cur is not None and seen < 8:
        texts.append(str(cur))
        cur, seen = cur.__cause__ or cur.__context__, seen + 1
    blob = "\n".join(texts)
    for pattern in _OP_PATTERNS:
        m = pattern.search(blob)
        if m:
            return f"the op {m.group(1)} has no ONNX conversion"
    lines = [ln.strip() for ln in blob.splitlines() if ln.strip()]
    return re.sub(r"\x1b\[[0-9;]*m", "", lines[0])[:400] if lines else type(exc).__name__


class TorchToOnnx(Step):
    name: ClassVar[str] = "torch_to_onnx"
    consumes: ClassVar[str] = "torch"
    produces: ClassVar[str] = "onnx"
    modules: ClassVar[tuple[str, ...]] = ("torch", "onnx", "onnxscript")

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        torch = require("torch")
        onnx = require("onnx")
        # an intermediate name: the fp32 artifact is a copy made by onnx_quantize, so no later step can alter it
        out = ctx.work / f"{ctx.stem}.export.onnx"
        shape = list(ctx.source.input_shape)
        dynamic = shape[0] <= 0
        # torch.export specialises a dimension of size 1, so a dynamic batch is traced at 2
        example = torch.rand(*[2 if dynamic else shape[0], *shape[1:]])
        opset = ctx.options.opset
        model: Any = inp.obj
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                if isinstance(model, torch.jit.ScriptModule):
                    # torch.export cannot trace a ScriptModule; the TorchScript-based exporter is the tool for it.
                    torch.onnx.export(
                        model, (example,), str(out), dynamo=False, opset_version=opset,
                        input_names=["input"], output_names=["output"],
                        dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}} if dynamic else None,
                    )
                else:
                    kwargs: dict[str, Any] = {}
                    if dynamic and not isinstance(model, torch.export.ExportedProgram):
                        kwargs["dynamic_shapes"] = ({0: torch.export.Dim("batch", min=1, max=4096)},)
                    torch.onnx.export(model, (example,), str(out), dynamo=True, external_data=False,
                                      opset_version=opset, **kwargs)
        except Exception as exc:
            raise ConversionError(
                f"PyTorch -> ONNX export failed (step torch_to_onnx): {explain(exc)}",
                hint="The op named above has no ONNX conversion at this opset; try --opset 17..21, or replace the "
                "op in the model. Re-run with EDGEKIT_DEBUG=1 for the exporter's full report.",
            ) from exc
        try:
            onnx.checker.check_model(str(out))
        except Exception as exc:
            raise ConversionError(f"The exported ONNX model does not pass onnx.checker: {exc}") from exc
        return Intermediate(kind="onnx", path=out, layout=inp.layout, precision="fp32",
                            meta={"exporter": "torchscript" if isinstance(model, torch.jit.ScriptModule) else "dynamo",
                                  "opset": opset})
