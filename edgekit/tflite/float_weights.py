"""A float16-weights .tflite (the converter's fp16 mode: MediaPipe's, TF Hub's, Model Maker's exports) as the float32
model it stands for, so that it can be calibrated and quantized like a model edgekit converted itself.

An fp16 .tflite keeps each weight as a float16 constant read by a DEQUANTIZE op whose float32 output the layer reads.
Here each such DEQUANTIZE goes, and its output tensor becomes a float32 constant holding the same values (float16 to
float32 is exact): the model computes what the fp16 file computes, with the layers' weights where the quantizer
looks for them.

A sparse .tflite (the converter's EXPERIMENTAL_SPARSITY: MediaPipe's pose detector, 38 of its 73 layers) keeps a
weight as a compressed constant (TFLite's SparsityParameters: a traversal order, dense and CSR dimensions, blocks)
read by a DENSIFY op, whose dense output the layer reads (through the DEQUANTIZE where it is also fp16). The MLIR
quantizer quantizes a layer's weights only where they are a constant: behind DENSIFY it left the filter float16
beside int8 activations, a CONV_2D that LiteRT refuses to load ("conv.cc:384 filter->quantization.type !=
kTfLiteAffineQuantization"). `dense_weights` first makes each DENSIFY of a constant the dense constant it computes
(exact: values are only moved), as LiteRT's own DENSIFY kernel does once at prepare time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgekit.tflite.flatbuffer import FlatModel

FLOAT16 = 1  # TensorType.FLOAT16
SPARSE_CSR = 1  # DimensionType.SPARSE_CSR (DENSE is 0)
# the TensorTypes a sparse constant holds (the values are copied, never converted)
_ELEMENT = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 9: np.int8}


def dense_weights(blob: bytes) -> tuple[bytes, int]:
    """BLOB with every DENSIFY of a sparse constant folded into the dense constant it computes, and how many there
    were. A DENSIFY whose sparsity this cannot read exactly is left as it was: should its layer then keep float
    weights beside int8 activations, edgekit.quantize.tflite.loadable names it after quantization."""
    f = FlatModel(blob)
    outputs = {int(t) for t in f.sg.outputs}
    folded: list[int] = []
    for k in reversed(range(len(f.sg.operators))):
        op = f.sg.operators[k]
        if f.name(k) != "DENSIFY" or len(op.inputs) != 1 or len(op.outputs) != 1:
            continue
        src, out = int(op.inputs[0]), int(op.outputs[0])
        t = f.sg.tensors[src]
        data = f.model.buffers[t.buffer].data if 0 < t.buffer < len(f.model.buffers) else None
        if data is None or len(data) == 0 or out in outputs or t.sparsity is None or t.type not in _ELEMENT:
            continue
        shape = [int(d) for d in f.sg.tensors[out].shape]
        values = np.frombuffer(bytes(np.asarray(data, np.uint8)), _ELEMENT[t.type])
        dense = densify(values, shape, t.sparsity)
        if dense is None:
            continue
        buf = f.schema.BufferT()
        buf.data = np.frombuffer(np.ascontiguousarray(dense).tobytes(), np.uint8)
        f.model.buffers.append(buf)
        f.sg.tensors[out].buffer = len(f.model.buffers) - 1
        del f.sg.operators[k]
        folded.append(src)
    if not folded:
        return blob, 0
    f.reindex()
    _drop_unread(f, folded)
    for i in folded:  # an unread compressed original: no sparsity left for a reader of the file to trip on
        if not f.readers.get(i):
            f.sg.tensors[i].sparsity = None
    return f.to_bytes(), len(folded)


def densify(values: np.ndarray, shape: list[int], sparsity: Any) -> np.ndarray | None:
    """The dense array of SHAPE that the compressed VALUES stand for under SPARSITY (the schema's
    SparsityParametersT), as TFLite's FormatConverter::SparseToDense lays it out; None where the sparsity is not
    one this reads (a format, a count or an index that does not fit), never a guess."""
    order = [int(d) for d in (sparsity.traversalOrder if sparsity.traversalOrder is not None else [])]
    block_map = [int(d) for d in (sparsity.blockMap if sparsity.blockMap is not None else [])]
    meta = list(sparsity.dimMetadata or [])
    rank = len(shape)
    if len(order) != rank + len(block_map) or len(meta) != len(order) or sorted(order) != list(range(len(order))):
        return None
    if any(not 0 <= d < rank for d in block_map):
        return None
    block = [int(meta[order[rank + b]].denseSize) for b in range(len(block_map))]
    if any(s <= 0 or shape[d] % s for s, d in zip(block, block_map, strict=True)):
        return None
    prev = np.zeros(1, np.int64)  # each path's position at its level (the CSR segment it opens)
    idx = np.zeros((1, 0), np.int64)  # each path's index at every level so far
    for m in meta:
        if m.format == SPARSE_CSR:
            segs, inds = _vector(m.arraySegments), _vector(m.arrayIndices)
            if segs is None or inds is None:
                return None
            has = prev + 1 < len(segs)
            prev, idx = prev[has], idx[has]
            lo, hi = segs[prev], np.minimum(segs[prev + 1], len(inds))
            counts = np.maximum(hi - lo, 0)
            rows = np.repeat(np.arange(len(prev)), counts)
            child = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts) + lo[rows]
            prev, idx = child, np.column_stack([idx[rows], inds[child]])
        else:
            size = int(m.denseSize)
            if size <= 0:
                return None
            step = np.arange(size)
            prev = (prev[:, None] * size + step).ravel()
            idx = np.column_stack([np.repeat(idx, size, axis=0), np.tile(step, len(idx))])
    if len(prev) != len(values):
        return None
    where = [np.zeros(len(prev), np.int64) for _ in range(rank)]
    for level in range(rank):
        where[order[level]] = idx[:, level]
    for level in range(rank, len(order)):
        b = order[level] - rank
        where[block_map[b]] = where[block_map[b]] * block[b] + idx[:, level]
    if any((w < 0).any() or (w >= s).any() for w, s in zip(where, shape, strict=True)):
        return None
    dense = np.zeros(shape, values.dtype)
    dense[tuple(where)] = values
    return dense


def _vector(v: Any) -> np.ndarray | None:
    """A SparseIndexVector's (Int32Vector, Uint16Vector or Uint8Vector) values as int64."""
    values = getattr(v, "values", None)
    return None if values is None else np.asarray(values, np.int64)


def float32_weights(blob: bytes) -> tuple[bytes, int]:
    """BLOB with every DEQUANTIZE of a float16 constant folded into a float32 constant, and how many there were."""
    f = FlatModel(blob)
    done = 0
    folded: list[int] = []
    outputs = {int(t) for t in f.sg.outputs}
    for k in reversed(range(len(f.sg.operators))):
        op = f.sg.operators[k]
        if f.name(k) != "DEQUANTIZE" or len(op.inputs) != 1:
            continue
        src, out = int(op.inputs[0]), int(op.outputs[0])
        t = f.sg.tensors[src]
        data = f.model.buffers[t.buffer].data if 0 < t.buffer < len(f.model.buffers) else None
        if t.type != FLOAT16 or data is None or len(data) == 0 or out in outputs or t.sparsity is not None:
            continue
        values = np.frombuffer(bytes(np.asarray(data, np.uint8)), np.float16).astype(np.float32)
        buf = f.schema.BufferT()
        buf.data = np.frombuffer(values.tobytes(), np.uint8)
        f.model.buffers.append(buf)
        f.sg.tensors[out].buffer = len(f.model.buffers) - 1
        del f.sg.operators[k]
        folded.append(src)
        done += 1
    if not done:
        return blob, 0
    f.reindex()
    _drop_unread(f, folded)
    return f.to_bytes(), done


def _drop_unread(f: FlatModel, tensors: list[int]) -> None:
    """Empty the buffers of TENSORS that no op reads any more (the folded weights' originals): else they stay in the
    file, and a quantizer that keeps unread tensors (the 16x8 calibrator's) ships them in the artifact."""
    gone = {i for i in tensors if not f.readers.get(i) and i not in {int(t) for t in f.sg.outputs}}
    used = {int(t.buffer) for g in f.model.subgraphs for i, t in enumerate(g.tensors) if g is not f.sg or i not in gone}
    for i in gone:
        if int(f.sg.tensors[i].buffer) not in used:
            f.model.buffers[int(f.sg.tensors[i].buffer)].data = None


__all__ = ["dense_weights", "densify", "float32_weights"]
