"""A float16-weights .tflite (the converter's fp16 mode: MediaPipe's, TF Hub's, Model Maker's exports) as the float32
model it stands for, so that it can be calibrated and quantized like a model edgekit converted itself.

An fp16 .tflite keeps each weight as a float16 constant read by a DEQUANTIZE op whose float32 output the layer reads.
Here each such DEQUANTIZE goes, and its output tensor becomes a float32 constant holding the same values (float16 to
float32 is exact): the model computes what the fp16 file computes, with the layers' weights where the quantizer
looks for them.
"""

from __future__ import annotations

import numpy as np

from edgekit.tflite.flatbuffer import FlatModel

FLOAT16 = 1  # TensorType.FLOAT16


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
        if t.type != FLOAT16 or data is None or len(data) == 0 or out in outputs:
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
    """Empty the float16 buffers of TENSORS that no op reads any more (the folded weights' originals): else they stay
    in the file, and a quantizer that keeps unread tensors (the 16x8 calibrator's) ships them in the artifact."""
    gone = {i for i in tensors if not f.readers.get(i) and i not in {int(t) for t in f.sg.outputs}}
    used = {int(t.buffer) for g in f.model.subgraphs for i, t in enumerate(g.tensors) if g is not f.sg or i not in gone}
    for i in gone:
        if int(f.sg.tensors[i].buffer) not in used:
            f.model.buffers[int(f.sg.tensors[i].buffer)].data = None


__all__ = ["float32_weights"]
