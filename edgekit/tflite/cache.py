"""A conversion run's TFLite float models and calibrations, each made once and reused by every TFLite artifact.

Why: a run asking for fp32 + int8 + the Edge TPU's uint8-I/O int8 used to convert the same SavedModel to a
float flatbuffer five times (the fp32 artifact; per int8 artifact, the converter's own float stage, the
search's float reference and the calibrated twin the diagnosis reads) and to calibrate it four times (the
converter's one-shot int8 path, then the twin, for each I/O type). Converting is the slow part (15 s for a
MobileNetV2 at 160x160 here, against 6 s to calibrate it on 100 samples and 0.4 s to quantize it), so an
Edge TPU run spent minutes on it.

The converter's full-integer path is itself three stages (tensorflow/lite/python/lite.py, `_quantize`):
the float model, its calibration (`Calibrator.calibrate`, which only records ranges, whatever the I/O type),
then `mlir_quantize` of the calibrated model to the I/O type asked for. Here the stages are split the same
way, and the first two are kept by content in a folder of the run's staging area: the float model by
SavedModel folder and signature, the calibrated model by the float model's and the samples' digests. The
int8 and the uint8-I/O models then come from one calibration; their outputs are the converter's own
(measured equal, to the last bit, on MobileNetV2; tests/steps/test_tflite_cache.py checks a tiny model).
The calibration stage itself is edgekit's (edgekit.tflite.calibrate: the float model run by LiteRT on every
core, each ranged tensor read back) where the model allows, the converter's calibrator elsewhere.
Without a folder (`None`), nothing is kept and every call does the work.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.fsutil import atomic_write_bytes

Dataset = Callable[[], Iterator[Any]]


def _kept(folder: Path | None, name: str, make: Callable[[], bytes]) -> bytes:
    """The bytes stored as NAME in FOLDER, or MAKE's, stored there for the next caller."""
    if folder is None:
        return make()
    path = folder / name
    if path.is_file():
        return path.read_bytes()
    blob = make()
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, blob)
    return blob


def float_model(tf: Any, saved: Path, signature: str, folder: Path | None) -> bytes:
    """The float TFLite model of SIGNATURE of the SavedModel at SAVED (the converter with no options)."""
    pb = os.stat(Path(saved) / "saved_model.pb")  # a SavedModel written again in the same place is another model
    key = hashlib.sha256(f"{os.path.realpath(saved)}|{pb.st_size}|{pb.st_mtime_ns}|{signature}".encode()
                         ).hexdigest()[:16]

    def make() -> bytes:
        converter = tf.lite.TFLiteConverter.from_saved_model(str(saved), signature_keys=[signature])
        return bytes(converter.convert())

    return _kept(folder, f"float-{key}.tflite", make)


def samples_digest(arrays: Iterable[np.ndarray], batch: int) -> str:
    """What identifies a calibration: the samples' bytes, shapes and dtypes, and the batch they are fed in."""
    h = hashlib.sha256(f"batch={batch}".encode())
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"|{a.dtype.str}{a.shape}".encode())
        h.update(a.data.cast("B"))  # the array's own memoryview: no copy
    return h.hexdigest()[:16]


def calibrated(float_bytes: bytes, dataset: Dataset, data_key: str, folder: Path | None,
               log: Callable[[str], None] | None = None, engine: str = "litert") -> bytes:
    """FLOAT_BYTES with the ranges DATASET's samples give every tensor: the converter's calibration stage.

    ENGINE "litert" measures them by running the model (edgekit.tflite.calibrate: faster, and right where the
    converter's calibrator misrecords); it hands models it does not cover, and any LiteRT fails on (said to LOG),
    to the converter's calibrator, which "converter" asks for outright. As the converter does, the calibrator
    first adds the tensors some ops need for their intermediate results (LSTMs).
    """
    key = f"{hashlib.sha256(float_bytes).hexdigest()[:16]}-{data_key}-{engine}"

    def make() -> bytes:
        if engine == "litert":
            from edgekit.tflite.calibrate import litert_calibrated

            measured = litert_calibrated(float_bytes, dataset, log)
            if measured is not None:
                return measured
        from tensorflow.lite.python.optimize import calibrator

        with_intermediates = calibrator.add_intermediate_tensors(float_bytes)
        return bytes(calibrator.Calibrator(with_intermediates).calibrate(dataset))

    return _kept(folder, f"calibrated-{key}.tflite", make)


def full_integer(tf: Any, cal: bytes, io_type: Any) -> bytes:
    """The calibrated model CAL quantized to int8 with IO_TYPE inputs and outputs: the converter's last stage."""
    from tensorflow.lite.python import convert

    return bytes(convert.mlir_quantize(cal, input_data_type=io_type, output_data_type=io_type))


__all__ = ["calibrated", "float_model", "full_integer", "samples_digest"]
