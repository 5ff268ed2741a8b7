"""A float .tflite as an editable object (the schema's object API): weights as arrays, who reads a tensor,
new tensors, constants and ops. Shared by the TFLite equalization and the Edge TPU graph fixes, which
both edit the float model before calibration. TensorFlow is imported when a model is opened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

FLOAT32, INT32, INT64 = 0, 2, 4  # TensorType.FLOAT32, INT32, INT64


def text(value: Any) -> str:
    """A name from the schema's object API (bytes there) as a string."""
    return value.decode() if isinstance(value, bytes) else str(value)


class FlatModel:
    def __init__(self, blob: bytes) -> None:
        from tensorflow.lite.python import schema_py_generated as schema
        from tensorflow.lite.tools import flatbuffer_utils as fu

        self.schema, self.fu = schema, fu
        self.model = fu.convert_bytearray_to_object(bytearray(blob))
        self.sg = self.model.subgraphs[0]
        self.codes = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
        self.reindex()

    def reindex(self) -> None:
        self.readers: dict[int, list[int]] = {}
        self.producer: dict[int, int] = {}
        for k, op in enumerate(self.sg.operators):
            for t in op.inputs:
                if t >= 0:
                    self.readers.setdefault(int(t), []).append(k)
            for t in op.outputs:
                self.producer[int(t)] = k

    def name(self, k: int) -> str:
        c = self.model.operatorCodes[self.sg.operators[k].opcodeIndex]
        return self.codes.get(max(c.builtinCode, c.deprecatedBuiltinCode), "?")

    def tensor_name(self, tensor: int) -> str:
        return text(self.sg.tensors[tensor].name)

    def only_reader(self, tensor: int) -> int | None:
        r = self.readers.get(tensor, [])
        return r[0] if len(r) == 1 and tensor not in list(self.sg.outputs) else None

    def const(self, tensor: int) -> np.ndarray | None:
        """The float32 constant held by TENSOR, or None (an activation, another type)."""
        t = self.sg.tensors[tensor]
        data = self.model.buffers[t.buffer].data if 0 < t.buffer < len(self.model.buffers) else None
        if data is None or t.type != FLOAT32:
            return None
        shape = [int(d) for d in t.shape] if t.shape is not None else []
        return np.frombuffer(bytes(np.asarray(data, np.uint8)), np.float32).reshape(shape).copy()

    def int_const(self, tensor: int) -> np.ndarray | None:
        """The int32/int64 constant held by TENSOR as int64 (a shape, perm, axis or padding), or None."""
        t = self.sg.tensors[tensor]
        data = self.model.buffers[t.buffer].data if 0 < t.buffer < len(self.model.buffers) else None
        if data is None or t.type not in (INT32, INT64):
            return None
        return np.frombuffer(bytes(np.asarray(data, np.uint8)), np.int32 if t.type == INT32 else np.int64
                             ).astype(np.int64)

    def weight(self, tensor: int) -> np.ndarray | None:
        """A float32 constant read by one op only (safe to change for that op)."""
        return self.const(tensor) if len(self.readers.get(tensor, [])) == 1 else None

    def set_weight(self, tensor: int, value: np.ndarray) -> None:
        t = self.sg.tensors[tensor]
        self.model.buffers[t.buffer].data = np.frombuffer(value.astype(np.float32).tobytes(), np.uint8)

    def add_const(self, name: str, value: np.ndarray) -> int:
        buf = self.schema.BufferT()
        buf.data = np.frombuffer(np.asarray(value, np.float32).tobytes(), np.uint8)
        self.model.buffers.append(buf)
        return self._tensor(name, list(np.shape(value)), len(self.model.buffers) - 1)

    def add_int32(self, name: str, value: np.ndarray) -> int:
        """A new int32 constant tensor (a RESHAPE's shape, a reduction's axes)."""
        buf = self.schema.BufferT()
        buf.data = np.frombuffer(np.asarray(value, np.int32).tobytes(), np.uint8)
        self.model.buffers.append(buf)
        k = self._tensor(name, list(np.shape(value)), len(self.model.buffers) - 1)
        self.sg.tensors[k].type = INT32
        return k

    def add_like(self, name: str, like: int) -> int:
        """A new float activation tensor with the shape of tensor LIKE."""
        t = self.sg.tensors[like]
        k = self._tensor(name, list(t.shape) if t.shape is not None else [], 0)
        if t.shapeSignature is not None:
            self.sg.tensors[k].shapeSignature = list(t.shapeSignature)
        return k

    def _tensor(self, name: str, shape: list[int], buffer: int) -> int:
        t = self.schema.TensorT()
        t.name, t.shape, t.type, t.buffer = name, np.array(shape, np.int32), FLOAT32, buffer
        self.sg.tensors.append(t)
        return len(self.sg.tensors) - 1

    def opcode(self, builtin: str) -> int:
        code = getattr(self.schema.BuiltinOperator, builtin)
        for k, c in enumerate(self.model.operatorCodes):
            if max(c.builtinCode, c.deprecatedBuiltinCode) == code:
                return k
        c = self.schema.OperatorCodeT()
        c.builtinCode, c.deprecatedBuiltinCode, c.version = code, min(code, 127), 1
        self.model.operatorCodes.append(c)
        return len(self.model.operatorCodes) - 1

    def make_op(self, builtin: str, inputs: list[int], outputs: list[int], options: Any = None,
                options_type: int = 0) -> Any:
        op = self.schema.OperatorT()
        op.opcodeIndex = self.opcode(builtin)
        op.inputs, op.outputs = np.array(inputs, np.int32), np.array(outputs, np.int32)
        op.builtinOptionsType, op.builtinOptions = options_type, options
        return op

    def reshape_op(self, x: int, y: int, shape: list[int], name: str) -> Any:
        """A RESHAPE of X into Y with SHAPE (its shape tensor a new constant called NAME_shape)."""
        opts = self.schema.ReshapeOptionsT()
        opts.newShape = list(shape)
        return self.make_op("RESHAPE", [x, self.add_int32(f"{name}_shape", np.array(shape, np.int32))], [y], opts,
                            self.schema.BuiltinOptions.ReshapeOptions)

    def replace_each(self, op_name: str, rewrite: Callable[[int, int, str], list[Any]]) -> int:
        """Every OP_NAME op (one input x, one output y) replaced, in order, by REWRITE(x, y, y's name)'s ops; how
        many were."""
        done = k = 0
        while k < len(self.sg.operators):
            if self.name(k) != op_name:
                k += 1
                continue
            op = self.sg.operators[k]
            x, y = int(op.inputs[0]), int(op.outputs[0])
            ops = rewrite(x, y, self.tensor_name(y))
            self.sg.operators[k:k + 1] = ops
            k += len(ops)
            done += 1
        self.reindex()
        return done

    def fused(self, builtin: str, activation: int = 0) -> tuple[Any, int]:
        """(options, options type) of ADD / MUL with a fused activation (0 none, 1 RELU, 3 RELU6)."""
        cls = getattr(self.schema, f"{builtin.title()}OptionsT")
        opts = cls()
        opts.fusedActivationFunction = activation
        return opts, getattr(self.schema.BuiltinOptions, f"{builtin.title()}Options")

    def prune_opcodes(self) -> None:
        """Drop operator codes no op uses any more (a runtime refuses a model naming an op it lacks, used or not)."""
        used = sorted({op.opcodeIndex for op in self.sg.operators})
        remap = {old: new for new, old in enumerate(used)}
        self.model.operatorCodes = [self.model.operatorCodes[k] for k in used]
        for op in self.sg.operators:
            op.opcodeIndex = remap[op.opcodeIndex]

    def to_bytes(self) -> bytes:
        self.prune_opcodes()
        return bytes(self.fu.convert_object_to_bytearray(self.model))


__all__ = ["FlatModel"]
