"""Small ONNX graph helpers the int8 recipes share: weights as arrays, who reads a tensor, MACs per node,
running a model with its intermediate tensors exposed.

onnx and onnxruntime are imported inside the functions: importing this module stays light.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

LATENCY_RUNS = 20  # the recipe's latency delta: median of this many single-threaded runs after 3 warm-ups


class Graph:
    """An ONNX model with its initializers as numpy arrays and the reader/writer maps of its tensors."""

    def __init__(self, model: Any) -> None:
        from onnx import numpy_helper

        self.model = model
        g = model.graph
        self.inits: dict[str, np.ndarray] = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        self.producer: dict[str, Any] = {o: n for n in g.node for o in n.output}
        self.consumers: dict[str, list[Any]] = defaultdict(list)
        for n in g.node:
            for i in n.input:
                if i:
                    self.consumers[i].append(n)
        self.outputs = {o.name for o in g.output}

    def set_init(self, name: str, value: np.ndarray) -> None:
        """Replace (or add) initializer NAME."""
        from onnx import numpy_helper

        g = self.model.graph
        tensor = numpy_helper.from_array(np.ascontiguousarray(value), name)
        for k, init in enumerate(g.initializer):
            if init.name == name:
                g.initializer[k].CopyFrom(tensor)
                break
        else:
            g.initializer.append(tensor)
        self.inits[name] = value

    def attr(self, node: Any, name: str, default: Any = None) -> Any:
        from onnx import helper

        for a in node.attribute:
            if a.name == name:
                return helper.get_attribute_value(a)
        return default

    def only_reader(self, tensor: str) -> Any | None:
        """The single node that reads TENSOR, or None when it is read by several, none, or is a graph output."""
        readers = self.consumers.get(tensor, [])
        return readers[0] if len(readers) == 1 and tensor not in self.outputs else None

    def const_scalar(self, node: Any, k: int) -> float | None:
        if len(node.input) <= k or not node.input[k]:
            return None
        v = self.inits.get(node.input[k])
        return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None


def name_nodes(model: Any) -> None:
    """Give every unnamed node a unique name: nodes_to_exclude and the diagnosis refer to nodes by name."""
    seen: set[str] = set()
    for k, node in enumerate(model.graph.node):
        if not node.name or node.name in seen:
            node.name = f"{node.op_type}_{k}"
        seen.add(node.name)


def node_macs(model: Any) -> dict[str, int]:
    """Multiply-accumulates of every node by name (0 for the cheap ones), from ONNX shape inference."""
    import onnx

    from edgekit.core.macs import onnx_node_macs

    inferred = onnx.shape_inference.infer_shapes(model)
    shapes: dict[str, list[int] | None] = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]:
        dims = vi.type.tensor_type.shape.dim
        shapes[vi.name] = [d.dim_value if d.dim_value > 0 else 1 for d in dims] if dims else None
    for init in inferred.graph.initializer:
        shapes[init.name] = list(init.dims)
    out: dict[str, int] = {}
    for node in inferred.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        out[node.name] = onnx_node_macs(node.op_type, [shapes.get(i) for i in node.input],
                                        [shapes.get(o) for o in node.output], attrs)
    return out


def session(model: Any, optimize: bool = True) -> Any:
    """An onnxruntime CPU session on MODEL (a ModelProto or a path); OPTIMIZE False runs the graph as written."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    blob = model.SerializeToString() if not isinstance(model, str | Path) else str(model)
    return ort.InferenceSession(blob, so, providers=["CPUExecutionProvider"])


def run_batches(sess: Any, x: np.ndarray, names: list[str] | None = None, batch: int = 1) -> list[np.ndarray]:
    """Outputs NAMES (all outputs when None) of SESS on every sample of X, batch by batch, concatenated."""
    inp = sess.get_inputs()[0]
    fixed = inp.shape[0] if inp.shape and isinstance(inp.shape[0], int) and inp.shape[0] > 0 else None
    step = fixed or max(batch, 1)
    names = names or [o.name for o in sess.get_outputs()]
    parts: list[list[np.ndarray]] = [[] for _ in names]
    for i in range(0, len(x), step):
        chunk = x[i:i + step]
        n = len(chunk)
        if fixed and n < fixed:
            chunk = np.concatenate([chunk, np.repeat(chunk[-1:], fixed - n, axis=0)])
        for k, y in enumerate(sess.run(names, {inp.name: chunk.astype(np.float32)})):
            parts[k].append(np.asarray(y)[:n])
    return [np.concatenate(p) for p in parts]


def latency_ms(path: Path, x: np.ndarray, runs: int = LATENCY_RUNS) -> float:
    """Median milliseconds of one run of PATH on one batch of X (its static batch, or 1), one thread."""
    import time

    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads, so.log_severity_level = 1, 1, 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    n = inp.shape[0] if inp.shape and isinstance(inp.shape[0], int) and inp.shape[0] > 0 else 1
    feed = {inp.name: np.resize(x[:n], (n, *x.shape[1:])).astype(np.float32)}
    for _ in range(3):
        sess.run(None, feed)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - t0)
    return float(1000 * np.median(times))


def with_outputs(model: Any, names: list[str]) -> Any:
    """A copy of MODEL that also returns tensors NAMES (float, shape left to the runtime)."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for name in names:
        if name not in have:
            m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    return m


def run_first_output(path: str | Path, x: np.ndarray) -> np.ndarray:
    """The first output of the ONNX model at PATH on every sample of X (a float twin, for the input-noise figure)."""
    return run_batches(session(str(path)), x)[0]


__all__ = ["Graph", "latency_ms", "name_nodes", "node_macs", "run_batches", "run_first_output", "session",
           "with_outputs"]
