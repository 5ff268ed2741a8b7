"""TFLite calibration by running the float model: each tensor the converter's calibrator ranges, measured with
LiteRT (XNNPACK, every usable core) in a child process, written into the model as the calibrator writes it.

Why not the converter's calibrator (tensorflow/lite/python/optimize/calibrator.py), which edgekit used alone
before:
- it is slow: it runs LiteRT's builtin kernels on one thread, each op wrapped by a logging kernel. Keras
  ConvNeXtTiny at 224x224: 0.56 s a sample, against 0.10 s here (0.08 s invoke on two cores, 0.02 s reading
  every tensor back; XNNPACK's first run takes 3.4 s more). Every int8 TFLite and Edge TPU artifact waits on
  it, twice where the Edge TPU graph fixes change the model.
- it misrecords tensors that an op overwrites. It logs an op's inputs again after the op has run
  (calibrator.cc, `LoggingEval`, for LSTM state), and LiteRT's memory planner may give an op's output the
  buffer of an input read by no later op (an ADD's, a MUL's; not when its output is a graph output): that
  input is then recorded with the output's range (tensorflow/tensorflow#127842, open).
  On Keras ConvNeXtTiny, 50 of 419 tensors got their consumer's range: every layer-scale branch (values near
  2e-6) recorded as -3.4..3.6, the residual sum, so int8 rounds the branch to zero. Here each ranged tensor
  is a graph output, which no op may overwrite.
Everything else is as the calibrator does it (calibrator.cc, calibration_logger.cc, calibration_reader.cc):
the tensors ranged are the float32 inputs and outputs of every op that hold no constant data; a range is the
min and max over every sample, NaN skipped; it is written as the tensor's QuantizationParameters holding only
that min and max. Ranges agree with the calibrator's to 1e-4 of the tensor's span on the tensors it records
right (differences are the kernels' rounding: 2 threads, another summation order; more only for means of
values near zero: a ConvNeXt LayerNorm's, +-3e-7, by 7%).

Models the calibrator treats specially stay with it (`None` here): more than one subgraph (control flow), ops
that need intermediate tensors (LSTM), and any model LiteRT fails on in the child (a custom op it lacks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgekit.core.errors import EdgekitError
from edgekit.core.records import Record

FLOAT32 = 0  # TensorType.FLOAT32
NEEDS_INTERMEDIATES = ("LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM")
CHUNK_BYTES = 256 * 2**20  # samples a child measures at once (the calibrator streams them; so does this, by chunk)


def ranged_tensors(fm: Any) -> list[int] | None:
    """The tensors the converter's calibrator ranges in FM (an edgekit.tflite.flatbuffer.FlatModel), in index
    order; None for a model it calibrates in ways not repeated here (several subgraphs, LSTMs)."""
    if len(fm.model.subgraphs) != 1 or any(fm.name(k) in NEEDS_INTERMEDIATES for k in range(len(fm.sg.operators))):
        return None

    def loggable(k: int) -> bool:
        t = fm.sg.tensors[k]
        buf = fm.model.buffers[t.buffer] if 0 <= t.buffer < len(fm.model.buffers) else None
        return t.type == FLOAT32 and (buf is None or buf.data is None or len(buf.data) == 0)

    seen = {int(k) for op in fm.sg.operators for k in [*op.inputs, *op.outputs] if k >= 0}
    return sorted(k for k in seen if loggable(k))


def litert_calibrated(float_bytes: bytes, dataset: Callable[[], Iterator[Any]],
                      log: Callable[[str], None] | None = None) -> bytes | None:
    """FLOAT_BYTES with the ranges DATASET's samples give its tensors (as the converter's calibrator writes them),
    measured by LiteRT in a child process (one per CHUNK_BYTES of samples); None where the calibrator must do it
    (the module's docstring says when; where LiteRT failed, LOG is told what it said)."""
    from edgekit.tflite.flatbuffer import FlatModel

    fm = FlatModel(float_bytes)
    ranged = ranged_tensors(fm)
    if ranged is None:
        return None
    inputs = [int(k) for k in fm.sg.inputs]
    outputs = fm.sg.outputs
    own = [int(k) for k in outputs]
    watched = [k for k in ranged if k not in inputs]
    # the probe: every ranged tensor a graph output, which LiteRT keeps and no op overwrites
    fm.sg.outputs = np.array(own + [k for k in watched if k not in own], np.int32)
    probe_bytes = bytes(fm.fu.convert_object_to_bytearray(fm.model))
    fm.sg.outputs = outputs  # the model written back with its ranges keeps its own outputs
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}

    def merge(k: int, a: float, b: float) -> None:
        lo[k], hi[k] = min(lo.get(k, a), a), max(hi.get(k, b), b)

    try:
        for chunk in _chunks(fm, dataset, inputs):
            for k, (a, b) in _measure(probe_bytes, chunk, watched).items():
                merge(k, a, b)
            for k in set(ranged) & set(chunk):  # a graph input: its range is the samples' own
                a, b = _range(chunk[k])
                if not np.isnan(a):
                    merge(k, a, b)
    except _NotFed:
        return None
    except EdgekitError as exc:
        if log:
            log(f"LiteRT could not run the float model for calibration ({exc.message}); "
                "TensorFlow's calibrator does it instead.")
        return None
    if not lo:
        return None
    return _with_ranges(fm, {k: (lo[k], hi[k]) for k in ranged if k in lo})


class _NotFed(Exception):
    """A dataset the calibrator reads in a way not repeated here."""


def _chunks(fm: Any, dataset: Callable[[], Iterator[Any]], inputs: list[int]) -> Iterator[dict[int, np.ndarray]]:
    """DATASET's batches stacked per input tensor (batches x the batch's shape), about CHUNK_BYTES at a time, so
    memory stays bounded whatever the number of samples. Raises _NotFed for samples it cannot map to the inputs
    (signature keys with tuples, other lengths) or whose shapes change (the calibrator fixes them at the first)."""
    from edgekit.tflite.flatbuffer import text

    by_key = {}
    if fm.model.signatureDefs:
        sig = fm.model.signatureDefs[0]
        by_key = {text(m.name): int(m.tensorIndex) for m in (sig.inputs or [])}
    parts: dict[int, list[np.ndarray]] = {k: [] for k in inputs}
    kinds: set[tuple[int, tuple[int, ...], str]] | None = None
    held = 0
    for sample in dataset():
        if isinstance(sample, dict) and set(sample) <= set(by_key) and len(sample) == len(inputs):
            pairs = [(by_key[name], np.asarray(a)) for name, a in sample.items()]
        elif isinstance(sample, list) and len(sample) == len(inputs):
            pairs = [(k, np.asarray(a)) for k, a in zip(inputs, sample, strict=True)]
        else:
            raise _NotFed
        these = {(k, a.shape, a.dtype.str) for k, a in pairs}
        if kinds is not None and these != kinds:
            raise _NotFed
        kinds = these
        for k, a in pairs:
            parts[k].append(a)
            held += a.nbytes
        if held >= CHUNK_BYTES:
            yield {k: np.stack(v) for k, v in parts.items()}
            parts, held = {k: [] for k in inputs}, 0
    if all(parts.values()):
        yield {k: np.stack(v) for k, v in parts.items()}


def _range(a: np.ndarray) -> tuple[float, float]:
    """Min and max of A's values, NaN skipped (as calibration_logger.cc); (nan, nan) where none is a number (or
    A is empty)."""
    a = np.asarray(a, np.float32).ravel()
    if a.size == 0:
        return float("nan"), float("nan")
    lo, hi = float(a.min()), float(a.max())
    if np.isnan(lo) or np.isnan(hi):
        a = a[~np.isnan(a)]
        if a.size == 0:
            return float("nan"), float("nan")
        lo, hi = float(a.min()), float(a.max())
    return lo, hi


def _measure(probe: bytes, feeds: dict[int, np.ndarray], watched: list[int]) -> dict[int, tuple[float, float]]:
    from edgekit.core.isolate import isolation_enabled, run_isolated

    request = MeasureRequest(inputs=sorted(int(k) for k in feeds), watched=[int(k) for k in watched])
    arrays = {"model": np.frombuffer(probe, np.uint8), **{f"t{k}": v for k, v in feeds.items()}}
    if isolation_enabled():
        _, out = run_isolated("edgekit.tflite.calibrate:_measure_in_child", request, arrays, who="LiteRT",
                              doing="running the float model for calibration")
    else:
        _, out = _measure_in_child(request, arrays)
    return {int(k): (float(a), float(b)) for k, a, b in zip(out["idx"].tolist(), out["lo"].tolist(),
                                                             out["hi"].tolist(), strict=True)
            if not (np.isnan(a) or np.isnan(b))}  # no value that is a number: the calibrator records nothing


@dataclass(frozen=True)
class MeasureRequest(Record):
    """What `_measure_in_child` is sent besides the arrays ("model", "t<index>"): the tensor indices to feed and watch.

    A record rather than a dict so a renamed key fails at the call, not as a KeyError inside the child.
    """

    inputs: list[int]  # the model's input tensors, each fed from array "t<index>"
    watched: list[int]  # the tensors whose ranges are measured


def _measure_in_child(request: MeasureRequest, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any],
                                                                                    dict[str, np.ndarray]]:
    """In the child: each watched tensor's min and max over every batch, the model run by LiteRT's default
    kernels (XNNPACK) on every usable core."""
    from edgekit.core.cores import usable_cores
    from edgekit.tflite.interpreter import interpreter_class

    it = interpreter_class()(model_content=arrays["model"].tobytes(), num_threads=usable_cores())
    inputs = list(request.inputs)
    watched = list(request.watched)
    feeds = {k: arrays[f"t{k}"] for k in inputs}
    details = {d["index"]: d for d in it.get_input_details()}
    shapes = {k: tuple(d["shape"]) for k, d in details.items()}
    for k in inputs:  # the calibrator resizes the inputs to the samples' shape, as here
        if shapes.get(k) != feeds[k].shape[1:]:
            it.resize_tensor_input(k, list(feeds[k].shape[1:]))
    it.allocate_tensors()
    lo = np.full(len(watched), np.inf, np.float64)
    hi = np.full(len(watched), -np.inf, np.float64)
    seen = np.zeros(len(watched), bool)  # a value that is a number (an infinity is one, as for the calibrator)
    n = len(next(iter(feeds.values())))
    for i in range(n):
        for k in inputs:  # the samples in the input's own type, as the calibrator feeds them
            it.set_tensor(k, np.asarray(feeds[k][i], details[k]["dtype"]))
        it.invoke()
        for j, k in enumerate(watched):
            a, b = _range(it.get_tensor(k))
            if not np.isnan(a):
                lo[j], hi[j], seen[j] = min(lo[j], a), max(hi[j], b), True
    lo[~seen] = hi[~seen] = np.nan
    return {}, {"idx": np.array(watched, np.int64), "lo": lo, "hi": hi}


def _with_ranges(fm: Any, ranges: dict[int, tuple[float, float]]) -> bytes:
    """FM's model with each tensor's QuantizationParameters replaced by its range alone (calibration_reader.cc)."""
    for k, (lo, hi) in ranges.items():
        q = fm.schema.QuantizationParametersT()
        q.min, q.max = [float(np.float32(lo))], [float(np.float32(hi))]
        fm.sg.tensors[k].quantization = q
    return bytes(fm.fu.convert_object_to_bytearray(fm.model))


__all__ = ["litert_calibrated", "ranged_tensors"]
