"""The ncnn target: `<stem>.<precision>.ncnn.param` + its `.ncnn.bin`, for ncnn on Arm CPUs (a Pi) and Vulkan GPUs.

Made by pnnx, which reads TorchScript (its own frontend) or ONNX. A PyTorch source is traced to TorchScript first
(torch.jit.trace of the .pt2's module, on the source's input shapes); where that trace, or pnnx on it, fails, pnnx
reads the ONNX the pipeline already made, which is the only route for ONNX and Keras sources. The trace comes first
because the dynamo ONNX of a MobileNetV2 holds a Gather (a flatten's as_strided) that pnnx leaves unconverted, and
ncnn then refuses the whole file. pnnx runs as its own binary in a scratch folder (it writes its intermediates
beside its input and in its working folder; a crash there is a failed artifact, never edgekit's); its output is
checked (both files written, one blob in0.. per model input and out0.. per output, every layer one ncnn has) and
its blobs are renamed after the source's tensors, with each input's shape written into its Input layer
(edgekit.ncnn.param), so the artifact says what it takes.

fp32: pnnx fp16=0 (weights stored in fp32); fp16: pnnx fp16=1 (weights stored in fp16; the runtime runs it with
ncnn's fp16 defaults: fp16 arithmetic where the CPU has it, edgekit.runtimes.ncnn). int8 is refused at plan time:
ncnn's int8 path is its ncnn2table (calibration table) and ncnn2int8 tools, which neither the ncnn nor the pnnx
wheel ships (their contents: the runtime's bindings and the pnnx binary only) and no registry here offers.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from edgekit.core.vendor import Vendor
from edgekit.steps.base import Intermediate, Step, StepContext
from edgekit.targets.base import TargetSpec

# the converter: a self-contained binary in a wheel (no exceptions of its own: it exits non-zero or crashes). Pinned
# with the ncnn runtime as the pair tested together (pyproject.toml)
PNNX = Vendor("pnnx", modules={"pnnx": "pnnx==20261020"}, extra="convert")

PNNX_TIMEOUT_S = 1800  # MobileNetV2 took 4 s here; a crash or hang is a failed artifact, not a stuck run
INT8_REFUSED = ("ncnn's int8 needs its ncnn2table and ncnn2int8 tools, which neither the ncnn nor the pnnx wheel "
                "ships (edgekit does not write ncnn's calibration table itself); use --target onnx,tflite or "
                "openvino for int8")


def pnnx_versions() -> str:
    """ "pnnx X / ncnn Y": the pair a failure names."""
    from edgekit.core._deps import version_of

    return f"pnnx {version_of('pnnx') or '(not installed)'} / ncnn {version_of('ncnn') or '(not installed)'}"


def onnx_io(path: Path) -> tuple[list[tuple[str, list[int]]], list[str]]:
    """([(input name, shape)], [output name]) of the ONNX at PATH, in graph order; a free dim of the first axis is
    the batch (1), any other free dim a UsageError (ncnn runs static shapes)."""
    import onnx

    from edgekit.core.errors import UnsupportedModel

    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = []
    for value in model.graph.input:
        if value.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in value.type.tensor_type.shape.dim]
        dims = [1 if (i == 0 and d <= 0) else d for i, d in enumerate(dims)]
        if any(d <= 0 for d in dims):
            raise UnsupportedModel(f"The ONNX input '{value.name}' has a free dimension {dims}: ncnn converts static "
                                   "shapes only.", hint="Convert with a fixed input shape (--input-shape).")
        inputs.append((value.name, dims))
    return inputs, [o.name for o in model.graph.output]


def shape_arg(inputs: list[tuple[str, list[int]]]) -> str:
    """pnnx's inputshape= value: [1,3,224,224]f32,[1,10]f32 ..."""
    return ",".join(f"[{','.join(str(d) for d in dims)}]f32" for _, dims in inputs)


class PnnxConvert(Step):
    """ONNX fp32 -> ncnn .param + .bin at the chain's precision, through the pnnx binary."""

    name: ClassVar[str] = "pnnx_convert"
    consumes: ClassVar[str] = "onnx"
    produces: ClassVar[str] = "ncnn"
    modules: ClassVar[tuple[str, ...]] = ("pnnx", "onnx", "ncnn")  # ncnn: its check of the layers, validation

    def outputs(self, stem: str) -> list[str]:
        base = f"{stem}.{self.params.precision}.ncnn"
        return [f"{base}.param", f"{base}.bin"]

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        """pnnx on each route in turn (the source's TorchScript trace, then the ONNX): the first ncnn model that
        comes out whole is the artifact; where none does, every route's failure is named."""
        from edgekit.core.errors import ConversionError

        precision = self.params.precision
        assert inp.path is not None
        inputs, outputs = onnx_io(inp.path)
        scratch = ctx.work / f"pnnx-{precision}"
        failures: list[tuple[str, ConversionError]] = []
        for route, make in self._routes(inp, ctx, inputs):
            folder = scratch / route
            folder.mkdir(parents=True, exist_ok=True)
            try:
                text, raw_bin = run_pnnx(make(folder), inputs, outputs, precision, ctx.log)
            except ConversionError as exc:
                failures.append((route, exc))
                ctx.log(f"pnnx from {route} failed: {exc.message}")
                continue
            if failures:
                ctx.log(f"pnnx from {route} made the ncnn model")
            param, weights = (ctx.work / name for name in self.outputs(ctx.stem))
            param.write_text(text, encoding="utf-8")
            shutil.copyfile(raw_bin, weights)
            # made from the trace, not from the ONNX: the ONNX's exporter and opset are not this artifact's facts
            facts = {"exporter": None, "opset": None} if route == "torchscript" else {}
            return inp.derive(kind="ncnn", path=param, precision=precision, **facts)
        last = failures[-1][1]
        if len(failures) == 1:
            raise last
        raise ConversionError(f"pnnx ({pnnx_versions()}) made no whole ncnn model: "
                              + "; ".join(f"from {route}: {exc.message}" for route, exc in failures),
                              step=self.name, op=last.op, hint=last.hint)

    def _routes(self, inp: Intermediate, ctx: StepContext,
                inputs: list[tuple[str, list[int]]]) -> list[tuple[str, Callable[[Path], Path]]]:
        """(route, folder -> the file pnnx reads): a PyTorch source's TorchScript trace first (pnnx's own
        frontend: the dynamo ONNX of a MobileNetV2 has a Gather from a flatten's as_strided that pnnx leaves as
        it is), then the ONNX the pipeline made."""
        assert inp.path is not None
        onnx_path = inp.path

        def from_onnx(folder: Path) -> Path:
            copy = folder / "model.onnx"
            shutil.copyfile(onnx_path, copy)
            for extra in onnx_path.parent.glob(onnx_path.name + ".*"):  # external data travels with it
                shutil.copyfile(extra, folder / extra.name)
            return copy

        routes: list[tuple[str, Callable[[Path], Path]]] = [("onnx", from_onnx)]
        model = getattr(ctx.source, "model", None)
        if ctx.source.family == "torch" and model is not None:
            routes.insert(0, ("torchscript", lambda folder: torchscript(model, inputs, folder / "model.pt")))
        return routes

def run_pnnx(model: Path, inputs: list[tuple[str, list[int]]], outputs: list[str], precision: str,
             log: Callable[[str], None] = print) -> tuple[str, Path]:
    """(the .param text, named after INPUTS and OUTPUTS, and pnnx's .bin) of pnnx run on MODEL (TorchScript or ONNX)
    in MODEL's folder; ConversionError where pnnx fails, crashes, or leaves blobs or layers ncnn cannot take."""
    from edgekit.core._deps import require
    from edgekit.core.errors import ConversionError

    pnnx = require("pnnx", purpose="convert models to ncnn", library=PNNX)
    folder = model.parent
    raw_param, raw_bin = folder / "model.ncnn.param", folder / "model.ncnn.bin"
    argv = [str(pnnx.EXEC_PATH), model.name, f"inputshape={shape_arg(inputs)}",
            f"ncnnparam={raw_param.name}", f"ncnnbin={raw_bin.name}", f"fp16={1 if precision == 'fp16' else 0}",
            *(f"{k}={v}" for k, v in (("pnnxparam", "model.pnnx.param"), ("pnnxbin", "model.pnnx.bin"),
                                      ("pnnxpy", "model_pnnx.py"), ("pnnxonnx", "model.pnnx.onnx"),
                                      ("ncnnpy", "model_ncnn.py")))]
    log(f"pnnx ({pnnx_versions()}): {model.name} -> ncnn {precision}")
    try:
        proc = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=PNNX_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ConversionError(f"pnnx ({pnnx_versions()}) did not finish in {PNNX_TIMEOUT_S} s.",
                              step="pnnx_convert") from None
    if proc.returncode != 0 or not raw_param.is_file() or not raw_bin.is_file():
        raise ConversionError(f"pnnx ({pnnx_versions()}) failed on the model: {_said(proc)}", step="pnnx_convert",
                              hint="A pnnx release can fail where another works; the pair edgekit tested is "
                                   "pinned in its extras. EDGEKIT_DEBUG=1 keeps the full log.")
    text = named(raw_param, inputs, outputs)
    check_layers(text, proc.stdout + proc.stderr)
    return text, raw_bin


def torchscript(model: Any, inputs: list[tuple[str, list[int]]], out: Path) -> Path:
    """MODEL (an ExportedProgram, a ScriptModule or an nn.Module) as TorchScript at OUT, traced on random inputs of
    the INPUTS' shapes; ConversionError where it cannot be traced."""
    import warnings

    import torch

    from edgekit.core.border import vendor_errors
    from edgekit.core.errors import ConversionError

    with vendor_errors("torch", error=ConversionError, step="pnnx_convert", what="Tracing the model to TorchScript "
                       "failed"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's warnings about guards it folds: the shapes are static here
        if isinstance(model, torch.jit.ScriptModule):
            torch.jit.save(model, str(out))
            return out
        module = model.module() if isinstance(model, torch.export.ExportedProgram) else model
        example = tuple(torch.rand(*dims) for _, dims in inputs)
        torch.jit.trace(module, example, check_trace=False).save(str(out))
    return out


def named(raw_param: Path, inputs: list[tuple[str, list[int]]], outputs: list[str]) -> str:
    """pnnx's .param text with in<i>/out<i> renamed after the ONNX's inputs and outputs and the input shapes
    written; ConversionError where pnnx's blobs are not one per input and output."""
    from edgekit.core.errors import ConversionError
    from edgekit.ncnn.param import parse_text, rename

    text = raw_param.read_text(encoding="utf-8")
    param = parse_text(text, raw_param)
    want_in, want_out = [f"in{i}" for i in range(len(inputs))], [f"out{i}" for i in range(len(outputs))]
    got_in, got_out = param.input_names(), param.output_names()
    if sorted(got_in) != sorted(want_in) or sorted(got_out) != sorted(want_out):
        raise ConversionError(f"pnnx ({pnnx_versions()}) wrote an ncnn model with inputs {got_in} and outputs "
                              f"{got_out} for a model of {len(inputs)} inputs and {len(outputs)} outputs.",
                              step="pnnx_convert", hint="pnnx dropped or merged a tensor: try another pnnx release.")
    names = {**{f"in{i}": n for i, (n, _) in enumerate(inputs)}, **{f"out{i}": n for i, n in enumerate(outputs)}}
    return rename(text, names, {n: s for n, s in inputs}, raw_param)


def check_layers(text: str, log: str) -> None:
    """ConversionError where pnnx left ops that ncnn has no layer for (it writes them under their ONNX name, and ncnn
    then refuses the whole file with "layer Pad not exists"), naming them and what pnnx said about them. Needs the
    ncnn runtime to ask (its layer table); where it is not installed, validation finds the same later."""
    from edgekit.core._deps import available
    from edgekit.core.errors import ConversionError
    from edgekit.ncnn.param import parse_text, unknown_layers

    if not available("ncnn"):
        return
    import ncnn

    unknown = unknown_layers(parse_text(text), lambda t: int(ncnn.layer_to_index(t)) >= 0)
    if not unknown:
        return
    said = [ln.strip() for ln in log.splitlines() if ln.startswith("ignore ")][:3]
    ops = "; ".join(f"{t} ({len(names)}: {', '.join(names[:3])})" for t, names in unknown.items())
    raise ConversionError(f"pnnx ({pnnx_versions()}) left ops ncnn has no layer for: {ops}"
                          + (f"; pnnx said: {' / '.join(said)}" if said else "") + ".",
                          step="pnnx_convert", op=next(iter(unknown)),
                          hint="pnnx could not map these ONNX ops with these attributes. A model exported from PyTorch "
                               "(NCHW) avoids the layout transposes around them that a Keras model's ONNX has.")


def _said(proc: subprocess.CompletedProcess[Any]) -> str:
    """The last meaningful lines pnnx printed (its own error, or a crash's signal)."""
    if proc.returncode < 0:
        import signal

        return f"it crashed ({signal.Signals(-proc.returncode).name})."
    lines = [ln.strip() for ln in (proc.stdout + "\n" + proc.stderr).splitlines() if ln.strip()]
    return " / ".join(lines[-3:])[:600] or f"exit status {proc.returncode} and no output."


TARGET = TargetSpec(
    name="ncnn",
    help="ncnn (.ncnn.param + .ncnn.bin) via pnnx for Arm CPUs (Raspberry Pi) and Vulkan GPUs; fp32, fp16",
    format="ncnn",
    steps=("edgekit.targets.ncnn:PnnxConvert",),
    precisions=("fp32", "fp16"),
    refused={"int8": INT8_REFUSED},
    libraries={"pnnx": PNNX},
)
