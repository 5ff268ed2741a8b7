"""onnxruntime's static int8 calibration in bounded memory: the samples fed a chunk at a time, each chunk folded.

What holds the memory (measured on PP-OCR's recogniser, 100 samples of 3x48x320, onnxruntime 1.32):
- MinMax (the plain recipe) keeps two reductions per tensor per sample: 0.9 GB peak, not the holder;
- percentile and entropy (HistogramCalibrater) keep every float tensor of every sample until the end:
  about 213 MB a sample for the recogniser and 177 MB for the detector, 18-21 GB for 100 samples.
onnxruntime's `CalibMaxIntermediateOutputs` cannot bound it: in 1.32 MinMaxCalibrater.collect_data clears
the outputs it reached without folding them into the ranges (they are lost), and the histogram
calibrators ignore it. `CalibStridedMinMax` does what is needed, for every method despite its name:
quantize_static then calls `collect_data` once per stride of the reader (`__len__` + `set_range`),
and each call folds what it ran and drops it: MinMax merges its ranges (the minimum of minima, so the
ranges are the same as in one pass), the histogram calibrators add into their histograms
(HistogramCollector widens the bins as larger values come, which is onnxruntime's own streaming path).
So the reader here counts chunks, each holding as many samples as fit CHUNK_BYTES of intermediate
tensors, and quantize_static gets a stride of one chunk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

CHUNK_BYTES = 256 * 1024 * 1024  # float intermediate tensors held by the calibrator between two folds


class ChunkedReader:
    """onnxruntime CalibrationDataReader (duck-typed) over our samples, in runs of BATCH and chunks of CHUNK samples
    (a multiple of the batch): `set_range(k, k + 1)` selects chunk k. FEEDS: several inputs, each by its name.

    Not a subclass of edgekit.quantize.onnx.ort.Reader: ort.py imports this module (no import cycle).
    """

    def __init__(self, name: str, samples: np.ndarray, batch: int, chunk: int,
                 feeds: dict[str, np.ndarray] | None = None) -> None:
        self.samples, self.batch = samples, max(1, batch)
        self.feeds = feeds or {name: samples}
        self.chunk = max(self.batch, chunk // self.batch * self.batch)
        self.i, self.end = 0, len(samples)

    def __len__(self) -> int:
        return -(-len(self.samples) // self.chunk)

    def set_range(self, start_index: int, end_index: int) -> None:
        self.i = start_index * self.chunk
        self.end = min(end_index * self.chunk, len(self.samples))

    def get_next(self) -> dict[str, np.ndarray] | None:
        if self.i >= min(self.end, len(self.samples)):
            return None
        run = {k: v[self.i:self.i + self.batch] for k, v in self.feeds.items()}
        self.i += self.batch
        return run

    def rewind(self) -> None:
        self.i, self.end = 0, len(self.samples)


def run_bytes(model: Any) -> int:
    """Bytes of float intermediate tensors one run of MODEL (a path or ModelProto) makes, from its shapes: one
    run of its static batch, or of one sample where the batch is free.

    Dims without a value (the free batch, unknown ones) count as 1: quantize_static's models come out of
    shape inference, pinned by `--input-shape` where the source had free dims.
    """
    import onnx

    m = onnx.load(str(model), load_external_data=False) if isinstance(model, str | Path) else model
    if len(m.graph.value_info) + len(m.graph.output) < sum(len(n.output) for n in m.graph.node):
        m = onnx.shape_inference.infer_shapes(m)  # not shape-inferred yet: quantize_static infers them too
    sizes = {onnx.TensorProto.FLOAT: 4, onnx.TensorProto.FLOAT16: 2}
    total = 0
    for vi in (*m.graph.value_info, *m.graph.output):
        t = vi.type.tensor_type
        if t.elem_type in sizes:
            total += sizes[t.elem_type] * int(np.prod([d.dim_value or 1 for d in t.shape.dim], dtype=np.int64))
    return total


def chunked_reader(model: Any, name: str, samples: np.ndarray, batch: int,
                   feeds: dict[str, np.ndarray] | None = None, chunk_bytes: int | None = None) -> ChunkedReader:
    """The reader quantize_static calibrates MODEL with (BATCH samples a run: its static batch, or 1): chunks of
    runs whose intermediates fit CHUNK_BYTES."""
    runs = max(1, (chunk_bytes or CHUNK_BYTES) // max(run_bytes(model), 1))
    return ChunkedReader(name, samples, batch, runs * max(1, batch), feeds)


def strided_options() -> dict[str, Any]:
    """quantize_static's extra_options that make it fold the calibration one reader chunk at a time."""
    return {"CalibStridedMinMax": 1}


__all__ = ["CHUNK_BYTES", "ChunkedReader", "chunked_reader", "run_bytes", "strided_options"]
