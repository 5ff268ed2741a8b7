"""ONNX -> TensorFlow SavedModel with onnx2tf (NCHW becomes NHWC, batch made static).

Pitfalls handled here (each one seen on real conversions):
- onnx2tf runs `onnxsim` as a subprocess found on PATH: the interpreter's bin folder is put on PATH,
  or it silently skips simplification and the batch stays dynamic.
- onnx2tf downloads sample images from GitHub for any 3-channel 4-D input to check its own output;
  offline that is a connection error. Its downloader is replaced, for the call, by the user's own
  calibration samples (or random data when there are none).
- onnx2tf's default "strict mode" checks the accuracy of every Add/Mul/Sub/Div/Conv/Reshape/...
  it converts by building a tf_keras.Model of the whole graph up to that op and running it: work
  that grows with (ops x graph size), and memory that is never given back. EfficientNet-B0 at
  160x160 (hundreds of such ops): 42 s and 9.2 GiB peak RSS with it, 14 s and 1.2 GiB without,
  and the same SavedModel outputs. It is turned off (disable_strict_mode): edgekit validates every
  artifact against the source, so a transposition error it would have corrected is reported as a
  fidelity failure, never published as good.
- onnx2tf runs in a child process (edgekit.core.isolate): TensorFlow's kernels abort the process on some
  graphs (an .onnx ConvNeXt-V2 ended edgekit with exit 134), which there fails this step's artifacts
  only. It costs one more TensorFlow import (the parent still needs TensorFlow for the TFLite
  converter); EDGEKIT_NO_ISOLATION=1 runs it in-process.
- The ONNX it reads is edgekit's private copy, cleaned up first (edgekit/steps/onnx_tf_prep.py).
- onnx2tf's own bugs that make a wrong model are worked around in its process (edgekit/steps/onnx2tf_fixes.py);
  what a workaround changed in the graph comes back from the child and is logged as the step's notes.
- onnx2tf goes on from the SavedModel to a float32 and a float16 .tflite edgekit never reads; it is stopped
  there (`_savedmodel_only`). transformers ConvNeXt-tiny at 160: this step 53.9 -> 39.3 s and the run's peak
  4.5 -> 2.6 GiB (medians of two runs each, alternated).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import require
from edgekit.core.border import all_text, vendor_cause, vendor_errors
from edgekit.core.errors import ConversionError, RuntimeFailure, UsageError
from edgekit.core.records import Record
from edgekit.core.scratch import absolute, scratch_cwd
from edgekit.steps.base import Intermediate, Step, StepContext
from edgekit.steps.onnx_tf_prep import prepare


@contextlib.contextmanager
def _env_for_onnx2tf(samples_nhwc: np.ndarray) -> Iterator[None]:
    o2t: Any = sys.modules["onnx2tf.onnx2tf"]  # untyped: no attribute is known to mypy
    old_path, old_dl = os.environ.get("PATH", ""), o2t.download_test_image_data
    bindir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bindir + os.pathsep + old_path
    o2t.download_test_image_data = lambda: samples_nhwc
    # Keras names layers from per-process counters ("tf.nn.convolution_3"), and the names reach the TFLite
    # file: without this, a second conversion in one process (the Python API, the test suite) gave other
    # bytes than the first. onnx2tf seeds once at import; seeding per conversion keeps it as a fresh process.
    tf_keras = sys.modules["tf_keras"]
    tf_keras.backend.reset_uids()
    tf_keras.utils.set_random_seed(0)
    try:
        yield
    finally:
        os.environ["PATH"] = old_path
        o2t.download_test_image_data = old_dl


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
CHANNELS_LAST = ("NWC", "NHWC", "NDHWC")
_OP_NAME = re.compile(r"onnx_op_name:\s*(\S+)")
_OP_TYPE = re.compile(r"onnx_op_type:\s*(\S+)")


def failed_op(log: str) -> str | None:
    """The ONNX node onnx2tf was converting when it failed: the last `onnx_op_name:` its log names."""
    names = _OP_NAME.findall(_ANSI.sub("", log))
    return names[-1] if names else None


def _unsupported_op(log: str, exc: BaseException) -> str:
    """What failed: the node onnx2tf names and the error it re-raised (not its generic closing advice).

    onnx2tf prints the traceback, `onnx_op_name: <node>` and four lines of general advice, then
    re-raises the exception (or exits); its last line ("... try the -onwdt option") says nothing
    about this model.
    """
    text = _ANSI.sub("", log)
    op = failed_op(text)
    types = _OP_TYPE.findall(text)
    if isinstance(exc, SystemExit):
        advice = ("option", "Read this", "trace log", "input_onnx_file_path", "onnx_op_name")
        lines = [ln.strip() for ln in text.splitlines() if "ERROR" in ln and not any(a in ln for a in advice)]
        cause = lines[-1][:300] if lines else "onnx2tf stopped"
    else:
        cause = vendor_cause(exc, 300)
    if op:
        kind = f" ({types[-1]})" if types else ""
        return f"at ONNX node {op}{kind}: {cause}"
    return cause


def _hint(exc: BaseException, layout: str) -> str:
    """The hint that fits the cause: a channel mismatch is a layout question; an exit an unsupported op."""
    text = all_text(exc)
    if _CHANNEL_MISMATCH.search(text):
        other = "NCHW" if layout in CHANNELS_LAST else "NHWC"
        return (f"The first convolution got the wrong axis as its channels: the input was read as {layout}. If the "
                f"model takes {other} input (tf2onnx writes Keras/TF models channels-last), pass --layout {other}.")
    if isinstance(exc, SystemExit):  # onnx2tf calls sys.exit(1) on unsupported ops
        return "onnx2tf cannot convert the op above; replace it in the model, or convert to --target onnx only."
    if _LOST_LAYOUT.search(text):
        return ("onnx2tf rewrites each node from NCHW to NHWC and lost track of this tensor's axes (it happens where a "
                "model reshapes feature maps into patches or tokens, as MobileViT does); the ONNX artifacts are not "
                "affected. Convert to --target onnx, or export the model with that part in channels-last order. "
                "--verbose shows onnx2tf's full log.")
    return "Run with --verbose (or EDGEKIT_DEBUG=1) for onnx2tf's full log."


# TensorFlow's words when onnx2tf applied a node to the wrong axes (a shape disagreement inside its graph)
_LOST_LAYOUT = re.compile(r"with unsupported shape|Dimensions must be equal|Incompatible shapes", re.IGNORECASE)
# TensorFlow's words when a convolution's input channels do not match its filter (an NHWC input read as NCHW)
_CHANNEL_MISMATCH = re.compile(r"not a multiple of input depth of filter|input depth must be evenly divisible|"
                               r"Depth of input .* does not match", re.IGNORECASE)


class OnnxToSavedModel(Step):
    name: ClassVar[str] = "onnx_to_savedmodel"
    consumes: ClassVar[str] = "onnx"
    produces: ClassVar[str] = "savedmodel"
    modules: ClassVar[tuple[str, ...]] = ("onnx2tf", "tensorflow", "onnx", "onnxsim")

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        require("onnx2tf", purpose="convert ONNX to TensorFlow")
        assert inp.path is not None
        out = ctx.work / f"{ctx.stem}_savedmodel"
        # onnx2tf's onnxsim pass rewrites its input file in place: give it a private copy, never the user's
        # source model nor an artifact another chain publishes.
        private = ctx.work / f"{ctx.stem}.onnx2tf-input.onnx"
        onnx = require("onnx")
        with vendor_errors("onnx", step=self.name, what=f"Copying {inp.path.name} for onnx2tf failed"):
            model = onnx.load(str(inp.path))
            for change in prepare(model, ctx.options.batch):
                ctx.log(f"  onnx2tf input: {change}")
            onnx.save(model, str(private))
        inits = {i.name for i in model.graph.initializer}
        # a channels-last input (tf2onnx's export of a Keras model) stays as it is: onnx2tf takes every 4-D
        # input for NCHW otherwise, and feeds H as the channels to the first Conv
        keep_nhwc = [i.name for i in model.graph.input if i.name not in inits] if inp.layout in CHANNELS_LAST else []
        del model
        batch = ctx.options.batch
        try:
            samples = ctx.to_layout(ctx.calibration(), "NHWC")
        except UsageError:  # no --calib: onnx2tf only uses these for its own self-check
            shape = [max(1, d) for d in ctx.source.input_shape]
            samples = np.random.default_rng(0).random([20, *shape[1:]], dtype=np.float32)
            samples = ctx.to_layout(samples, "NHWC")
        # absolute: the child (and scratch_cwd in it) runs elsewhere; a relative --out (edgekit-out/<stem> by
        # default) would otherwise be read inside the scratch folder, where the file is not
        request = Onnx2TfRequest(src=absolute(private), out=absolute(out), batch=batch, keep_nhwc=keep_nhwc,
                                 layout=inp.layout)
        for repair in run_onnx2tf(request, np.ascontiguousarray(samples[:20]), inp.path.name):
            ctx.log(f"  onnx2tf: {repair}")
        private.unlink(missing_ok=True)
        for leftover in out.glob("*.tflite"):  # onnx2tf's own TFLite files: edgekit converts with its own settings
            leftover.unlink()
        layout = "NHWC" if inp.layout == "NCHW" else inp.layout  # onnx2tf writes channels-last either way
        return inp.derive(kind="savedmodel", path=out, layout=layout, precision="fp32", signature="serving_default",
                          batch=batch)


@dataclass(frozen=True)
class Onnx2TfRequest(Record):
    """What the conversion child (`convert_in_child`) is sent besides the samples: files, batch and layout.

    A record rather than a dict so a renamed key fails at the call, not as a KeyError inside the child.
    """

    src: str  # absolute: the child converts inside a scratch folder
    out: str  # the SavedModel folder to write, absolute too
    batch: int
    keep_nhwc: list[str] = field(default_factory=list)  # channels-last inputs onnx2tf must not transpose
    layout: str = "NCHW"  # the ONNX model's image layout, for the hint of a failure


def run_onnx2tf(request: Onnx2TfRequest, samples: np.ndarray, name: str) -> list[str]:
    """onnx2tf on REQUEST in a child process, so a native abort in TensorFlow or onnx2tf fails this step only;
    what edgekit's workarounds changed in the conversion (edgekit.steps.onnx2tf_fixes.repairs).

    onnx2tf builds the graph with TensorFlow kernels, which abort (SIGABRT) rather than raise on some
    inputs: an .onnx ConvNeXt-V2 took edgekit down with exit 134. In the child that is a ConversionError
    naming the step and the signal, and the artifacts that do not need this step still publish.
    EDGEKIT_NO_ISOLATION=1 runs it in this process.
    """
    from edgekit.core.isolate import isolation_enabled, run_isolated

    if not isolation_enabled():
        answer, _ = convert_in_child(request, {"samples": samples})
        return list(answer.get("repairs", []))
    try:
        answer, _ = run_isolated(CHILD, request, {"samples": samples},
                                 who="onnx2tf", doing=f"converting {name} to a TensorFlow SavedModel",
                                 hint=CRASH_HINT, timeout=CHILD_TIMEOUT_S)
    except RuntimeFailure as exc:  # the child died (a signal, no answer, the timeout): this step's failure
        raise ConversionError(exc.message, hint=exc.hint, step=OnnxToSavedModel.name, op=exc.op) from exc
    return list(answer.get("repairs", []))


CHILD = "edgekit.steps.onnx_to_savedmodel:convert_in_child"  # what the child runs ("module:function")
CHILD_TIMEOUT_S = 3600.0  # a slow conversion is not a crash; the zoo's own limits are shorter
CRASH_HINT = ("The crash is native code in onnx2tf/TensorFlow, not a Python error; the ONNX artifacts do not need "
              "this step. EDGEKIT_DEBUG=1 shows the child's full log.")


class _SavedModelWritten(Exception):  # noqa: N818 (a signal, not an error)
    """Raised where onnx2tf starts converting to TFLite itself: its SavedModel is written by then."""


@contextlib.contextmanager
def _savedmodel_only() -> Iterator[None]:
    """onnx2tf stopped once its SavedModel is written.

    After the SavedModel, onnx2tf.convert always converts the model to a float32 and a float16 .tflite (line
    ~1566 of onnx2tf.py, 1.28.8: no option turns that off) that edgekit never reads: edgekit converts the
    SavedModel itself, with its own options (edgekit.steps.tflite_convert). Those two conversions were time
    and memory of this step for nothing; the converter's entry point raises _SavedModelWritten here instead.
    """
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter
    original = converter.__dict__["from_concrete_functions"]

    def stop(cls: Any, *args: Any, **kwargs: Any) -> Any:
        raise _SavedModelWritten

    converter.from_concrete_functions = classmethod(stop)
    try:
        yield
    finally:
        converter.from_concrete_functions = original


def convert_in_child(request: Onnx2TfRequest, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                     dict[str, np.ndarray]]:
    """onnx2tf.convert on request.src into request.out (edgekit.core.isolate's child, or in-process).

    Imports onnx2tf (and with it TensorFlow) and nothing else heavy. onnx2tf's log goes to a buffer: its
    node names make the error message; with EDGEKIT_DEBUG set it is printed (stderr) as well.
    """
    require("onnx2tf", purpose="convert ONNX to TensorFlow")
    import onnx2tf

    from edgekit.steps import onnx2tf_fixes

    onnx2tf_fixes.apply()  # before any onnx2tf op module is imported (they are, lazily, by convert)

    log = io.StringIO()
    layout = request.layout
    onnx2tf_errors = vendor_errors("onnx2tf", step=OnnxToSavedModel.name, what="ONNX -> TensorFlow conversion failed",
                                   describe=lambda exc: _unsupported_op(log.getvalue(), exc),
                                   hint=lambda exc: _hint(exc, layout))
    try:
        with onnx2tf_errors, _env_for_onnx2tf(arrays["samples"]), contextlib.redirect_stdout(log), scratch_cwd(), \
                contextlib.suppress(_SavedModelWritten), _savedmodel_only():
            onnx2tf.convert(  # in a scratch folder: onnx2tf and onnxsim write by relative names
                input_onnx_file_path=request.src,
                output_folder_path=request.out,
                batch_size=request.batch,
                output_signaturedefs=True,
                copy_onnx_input_output_names_to_tflite=True,
                disable_strict_mode=True,  # see the module docstring: O(ops x graph) time and memory
                keep_nwc_or_nhwc_or_ndhwc_input_names=request.keep_nhwc or None,
                # TFLite has no builtin ERF: torch's GELU (Mul(0.5) before Mul(x)) is not one onnx2tf fuses into
                # GELU, so its Erf stopped the TFLite converter (PoolFormer, ConvNeXt). onnx2tf writes it as its
                # polynomial (Abramowitz-Stegun 7.1.26, |error| < 1.5e-7) in builtin ops instead.
                replace_to_pseudo_operators=["erf"],
                non_verbose=True,
            )
    except ConversionError as exc:  # the per-artifact failure names the node onnx2tf stopped at
        exc.op = exc.op or failed_op(log.getvalue())
        raise
    finally:
        if os.environ.get("EDGEKIT_DEBUG"):
            sys.stderr.write(log.getvalue())
    if not (Path(request.out) / "saved_model.pb").is_file():
        raise ConversionError("onnx2tf finished without writing a SavedModel (step onnx_to_savedmodel).",
                              hint=_ANSI.sub("", log.getvalue())[-400:])
    return {"repairs": onnx2tf_fixes.repairs()}, {}
