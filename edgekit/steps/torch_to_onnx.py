"""PyTorch -> ONNX fp32, a single file (no external data), batch dynamic where the model allows it."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any, ClassVar

from edgekit.core._deps import require
from edgekit.core.border import all_text, vendor_errors, vendor_message
from edgekit.steps.base import Intermediate, Step, StepContext

_OP_PATTERNS = (
    re.compile(r"op='(aten\.[\w.]+)'"),
    re.compile(r"target=torch\.ops\.(aten\.[\w.]+)"),
    re.compile(r"(aten::\w+)"),
    re.compile(r"Exporting the operator '?([\w:.]+)'? to ONNX"),
)


STACK_TRACE_KEY = "pkg.torch.onnx.stack_trace"


def strip_stack_traces(graph: Any) -> int:
    """Drop the exporter's per-node Python stack traces from GRAPH (and its subgraphs); how many were dropped.

    torch.onnx's dynamo exporter records, for every node, the stack of the model's forward with absolute file
    paths (`File "/home/<user>/project/model.py", line 39`): every artifact shipped to a device carried the
    converting machine's paths and user name, and differed between two machines. The module names and class
    hierarchy the exporter also records (no paths) are kept: they map a node back to the layer.
    """
    dropped = 0
    for node in graph.node:
        keep = [p for p in node.metadata_props if p.key != STACK_TRACE_KEY]
        if len(keep) != len(node.metadata_props):
            dropped += len(node.metadata_props) - len(keep)
            del node.metadata_props[:]
            node.metadata_props.extend(keep)
        for attr in node.attribute:
            if attr.HasField("g"):
                dropped += strip_stack_traces(attr.g)
            for sub in attr.graphs:
                dropped += strip_stack_traces(sub)
    return dropped


def unsupported_op(exc: BaseException) -> str | None:
    """The op the exporter could not convert, searched through the exception chain's messages."""
    blob = all_text(exc)
    for pattern in _OP_PATTERNS:
        m = pattern.search(blob)
        if m:
            return m.group(1)
    return None


def explain(exc: BaseException) -> str:
    """The unsupported op, where one is named, else the exporter's first informative line."""
    op = unsupported_op(exc)
    return f"the op {op} has no ONNX conversion" if op else vendor_message(exc)


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
        # the source's output names ("output", "output_<i>", a dict's keys): artifacts are validated by name
        outputs = list(ctx.source.output_names or ["output"])
        log = io.StringIO()
        with vendor_errors(
            "torch.onnx", step=self.name, what="PyTorch -> ONNX export failed", describe=explain, op=unsupported_op,
            hint="The op named above has no ONNX conversion at this opset; try --opset 17..21, or replace the "
            "op in the model. Re-run with EDGEKIT_DEBUG=1 for the exporter's full report.",
        ), contextlib.redirect_stdout(log):
            if isinstance(model, torch.jit.ScriptModule):
                # torch.export cannot trace a ScriptModule; the TorchScript-based exporter is the tool for it.
                torch.onnx.export(
                    model, (example,), str(out), dynamo=False, opset_version=opset,
                    input_names=["input"], output_names=outputs,
                    dynamic_axes={n: {0: "batch"} for n in ["input", *outputs]} if dynamic else None,
                )
            else:
                kwargs: dict[str, Any] = {}
                if dynamic and not isinstance(model, torch.export.ExportedProgram):
                    kwargs["dynamic_shapes"] = ({0: torch.export.Dim("batch", min=1, max=4096)},)
                # the source's input name, as the TorchScript path names it: every artifact and Triton then answer
                # to the name the manifest records (the dynamo exporter otherwise takes forward()'s argument name)
                torch.onnx.export(model, (example,), str(out), dynamo=True, external_data=False,
                                  opset_version=opset, input_names=[ctx.source.input_name], output_names=outputs,
                                  **kwargs)
        with vendor_errors("onnx", step=self.name, what="The exported ONNX model does not pass onnx.checker"):
            model_proto = onnx.load(str(out))
            if strip_stack_traces(model_proto.graph):
                onnx.save(model_proto, str(out))
            del model_proto
            onnx.checker.check_model(str(out))
        return inp.derive(kind="onnx", path=out, precision="fp32", opset=opset,
                          exporter="torchscript" if isinstance(model, torch.jit.ScriptModule) else "dynamo")
