"""The TFLite `bias-shift` recipe: bias correction measured on the int8 model itself, for every shift a layer's output
carries there, not only its own weights' (edgekit.quantize.tflite.bias).

Why: `bias` removes (W~ - W) E[x], what a layer's int8 weights do to its mean output. What a layer of the int8
model outputs also moves with everything quantized before it that a linear correction upstream cannot take back:
activation ranges that clip, rounding through non-linear ops (hard-swish, sigmoid gates, pooling). NNCF's full
`BiasCorrection` measures that total (each layer's output mean in the quantized model against the float model's)
and corrects the layers one by one in graph order; on the trained PP-OCRv4 recognizer it is what lifted ONNX int8
from 94-96% to 98.7% of CTC steps (issue 29, docs/results/int8.md).

How, here: every layer's output mean per channel is measured in the float model (once) and in the int8 model (the
float model calibrated and quantized as the recipes do, with float I/O), on at most MAX_SAMPLES calibration samples;
each layer's float bias is moved by DAMPING times the difference, and the model is calibrated and quantized again,
ROUNDS times. Correcting every layer at once, a layer also removes the shift its corrected upstream layers no
longer send it; the next round measures that over-correction and takes it back (a Jacobi iteration of NNCF's
layer-by-layer pass: ROUNDS builds in place of one per layer). A layer whose shift ran away after its move is put back
and left alone (on PP-OCRv4's recognizer, biases the int8 model cannot hold, their int32 clipped, answered no move
and the shifts ran away: 2.85 -> 8,370 in three rounds before this guard), and where the largest shift left is no
smaller than at the start, the model is returned as it was. The record says each round's largest remaining shift.
Ops without a bias tensor are skipped, as `bias` skips them.

The int8 model runs in this process (LiteRT with every intermediate tensor kept and no default delegate, as `bias`
runs the float model): it is the same model the search's own candidates are built as.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any

import numpy as np

from edgekit.quantize.tflite.bias import MAX_SAMPLES, _name, _own_bias, _targets, tensor_interpreter
from edgekit.tflite.flatbuffer import FlatModel

ROUNDS = 3
DAMPING = 0.8  # a share of the measured shift per round: the remaining one shrinks without swinging past zero
RUNAWAY = 2.0  # a layer whose shift after its move is this many times the one it answered (and past the largest
# shift at the start) is put back and left alone


@dataclass(frozen=True)
class ShiftCorrection:
    """What the correction did: the layers corrected, and the largest output-mean shift left after each round."""

    corrected: tuple[str, ...]
    no_bias: tuple[str, ...]
    largest: tuple[float, ...]  # before round 1, then after each round's correction was measured again

    def words(self) -> str:
        trail = " -> ".join(f"{v:.3g}" for v in self.largest)
        more = f", {len(self.no_bias)} without a bias tensor skipped" if self.no_bias else ""
        return (f"bias-shift: {len(self.corrected)} layers' biases moved by their output-mean shift in the int8 "
                f"model, {len(self.largest) - 1} rounds (largest shift {trail}){more}")


def channel_means(blob: bytes, names: list[str], batches: list[list[np.ndarray]]) -> dict[str, np.ndarray]:
    """The mean per channel (last axis) of each tensor NAMES of the model BLOB (float or int8, float I/O) over
    BATCHES, dequantized where int8."""
    it = tensor_interpreter(blob)
    details = {d["name"]: d for d in it.get_tensor_details()}
    sums: dict[str, np.ndarray] = {}
    counts: Counter[str] = Counter()
    for batch in batches:
        for d, a in zip(it.get_input_details(), batch, strict=True):
            it.set_tensor(d["index"], np.asarray(a, d["dtype"]))
        it.invoke()
        for n in names:
            d = details.get(n)
            if d is None:
                continue
            a = np.asarray(it.get_tensor(d["index"]), np.float64)
            scale, zero = d["quantization"]
            if d["dtype"] != np.float32 and scale:
                a = (a - zero) * scale
            flat = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
            sums[n] = sums[n] + flat.sum(0) if n in sums else flat.sum(0)
            counts[n] += len(flat)
    return {n: s / counts[n] for n, s in sums.items()}


def correct_shifts(job: Any, float_blob: bytes, rounds: int = ROUNDS) -> tuple[bytes, ShiftCorrection]:
    """FLOAT_BLOB (JOB's float model, or an edited one) with every layer's bias moved until the int8 model's output
    means per channel meet the float model's (ROUNDS rounds); what was done."""
    from edgekit.quantize.tflite.recipes import calibrated, quantized

    f = FlatModel(float_blob)
    targets, no_bias, _ = _targets(f)
    buffers = Counter(t.buffer for t in f.sg.tensors if t.buffer > 0)
    biases = {k: _own_bias(f, k, buffers) for k, _ in targets}
    f.reindex()
    names = {k: _name(f, k) for k, _ in targets}
    current = {k: np.asarray(f.const(t), np.float64) for k, t in biases.items()}
    batches = [b for b in islice(job.representative(), MAX_SAMPLES // max(1, job.batch)) if isinstance(b, list)]
    blob = f.to_bytes()
    ref = channel_means(blob, list(names.values()), batches)
    measure = replace(job, io_dtype="float32")  # the int8 model with float I/O: its intermediates are what counts
    largest: list[float] = []
    before: dict[int, np.ndarray] = {}  # each layer's bias before its last move, and the shift that move answered
    seen: dict[int, float] = {}
    frozen: set[int] = set()
    start = blob
    for r in range(rounds + 1):
        got = channel_means(quantized(measure, calibrated(job, blob)), list(names.values()), batches)
        shifts = {k: got[n] - ref[n] for k, n in names.items() if n in got and n in ref
                  and got[n].shape == ref[n].shape == current[k].shape}
        largest.append(float(max((np.abs(d).max() for d in shifts.values()), default=0.0)))
        if r == rounds:  # the last measurement only says what is left
            break
        for k, d in shifts.items():
            now = float(np.abs(d).max())  # a runaway, not the swing an upstream move gives one round
            worse = k in seen and now > RUNAWAY * seen[k] and now > largest[0]
            if worse and k not in frozen:  # its move made it worse: undone, and left alone from now on (a bias
                current[k] = before[k]  # the int8 model cannot hold, clipped to int32, answers no move)
                frozen.add(k)
            if k in frozen:
                f.set_weight(biases[k], current[k])
                continue
            before[k], seen[k] = current[k], float(np.abs(d).max())
            current[k] = current[k] - DAMPING * d
            f.set_weight(biases[k], current[k])
        blob = f.to_bytes()
    if largest[-1] >= largest[0]:  # no better than it started: the float model as it was
        return start, ShiftCorrection((), tuple(_name(f, k) for k in no_bias), tuple(largest))
    done = tuple(names[k] for k in current if k in seen and k not in frozen)
    return blob, ShiftCorrection(done, tuple(_name(f, k) for k in no_bias), tuple(largest))


__all__ = ["DAMPING", "ROUNDS", "RUNAWAY", "ShiftCorrection", "channel_means", "correct_shifts"]
