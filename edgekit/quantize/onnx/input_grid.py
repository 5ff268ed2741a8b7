"""Graph inputs that int8 cannot hold: left float where they are 8-bit data centred between two levels.

A model fed 8-bit pixels through an affine normalisation that centres them, as MTCNN's (x - 127.5) / 128 or the
[-1, 1] of x / 127.5 - 1 (`--mean 0.5 --std 0.5`), sees at most 256 values one step apart with zero half-way
between two of them. An int8 grid always holds zero, so the best it can do (the step as scale, which min/max
calibration finds on the full range) puts every value half a step off a grid point, and QuantizeLinear rounds each
pixel by half a step, up or down by its parity: an error of half a step on every input, where the rounding of a
later tensor is 0.29 of a step (RMS). A range short of the extremes gives a scale that drifts across the levels
instead. Measured on MTCNN's P-Net (docs/results/int8.md): the float model fed the rounded input alone keeps 94.7%
of the proposal cells, and the int8 model with its input left float gains 0.6-1.8 points of proposal IoU.

So where every calibration value of a graph input is such 8-bit data (`half_step_grid`), the input's
QuantizeLinear/DequantizeLinear pair is taken out: its readers (the first layer) take the float input and run in
float, the rest of the model stays int8. Inputs on a grid that holds zero (pixels in [0, 1] or 0-255) or on none
are left as onnxruntime made them. onnxruntime is not needed: the model is read with onnx.
"""

from __future__ import annotations

from typing import Any

import numpy as np

HALF_STEP_TOLERANCE = 1e-3  # of a step: how close to half-way a value must be to count as half-way


def half_step_inputs(model: Any, feeds: dict[str, np.ndarray]) -> list[str]:
    """The graph inputs of MODEL (a quantized ModelProto), each read through one QuantizeLinear, whose values in
    FEEDS[input] are 8-bit data with zero half-way between two levels (`half_step_grid`): no int8 grid holds them,
    whatever scale the calibration chose (the full range gives the data's step and every value half a step off; a
    range short of the extremes gives a step that drifts across the levels)."""
    found = []
    for inp in model.graph.input:
        x = feeds.get(inp.name)
        readers = [n for n in model.graph.node if inp.name in n.input]
        if x is None or len(readers) != 1 or readers[0].op_type != "QuantizeLinear":
            continue
        if half_step_grid(np.asarray(x)) is not None:
            found.append(inp.name)
    return found


def half_step_grid(x: np.ndarray) -> float | None:
    """The step of X's values where they are at most 256 levels of one step with zero half-way between two of them
    ((k - 127.5) / 128, k / 127.5 - 1 ...), else None. Read a chunk at a time: most inputs fail on their first
    values, and a calibration set of pages would be GBs in float64 at once."""
    if not x.size:
        return None
    first = np.unique(np.asarray(x[: max(1, min(len(x), 16))], np.float64))
    if len(first) < 2 or len(first) > 256:
        return None
    step = float(np.diff(first).min())
    if not step > 0:
        return None
    for chunk in np.array_split(x, -(-len(x) // 16)):
        steps = np.asarray(chunk, np.float64).ravel() / step
        if float(np.abs(steps - np.floor(steps) - 0.5).max()) >= HALF_STEP_TOLERANCE:
            return None
    return step


def keep_inputs_float(model: Any, names: list[str]) -> list[str]:
    """Take the QuantizeLinear/DequantizeLinear pair off each graph input of NAMES (in place): the pair's readers
    read the input itself. The names of the inputs changed."""
    changed: list[str] = []
    dropped: set[str] = set()
    nodes = list(model.graph.node)
    for name in names:
        q = next((n for n in nodes if n.op_type == "QuantizeLinear" and n.input[0] == name), None)
        if q is None:
            continue
        dqs = [n for n in nodes if n.op_type == "DequantizeLinear" and n.input[0] == q.output[0]]
        pair = {id(q), *(id(d) for d in dqs)}
        if not dqs or any(id(n) not in pair and q.output[0] in n.input for n in nodes):
            continue  # the quantized input is read raw somewhere: not a plain pair
        for dq in dqs:
            for n in nodes:
                for i, t in enumerate(n.input):
                    if t == dq.output[0]:
                        n.input[i] = name
        dropped.update(t for n in (q, *dqs) for t in n.input[1:])
        nodes = [n for n in nodes if id(n) not in pair]
        changed.append(name)
    if changed:
        del model.graph.node[:]
        model.graph.node.extend(nodes)
        unused = dropped - _read(model.graph)  # the pairs' scales and zero points that nothing else reads
        keep = [i for i in model.graph.initializer if i.name not in unused]
        del model.graph.initializer[:]
        model.graph.initializer.extend(keep)
    return changed


def _read(graph: Any) -> set[str]:
    """Every tensor name the nodes of GRAPH and of its subgraphs (If, Loop, Scan bodies) read."""
    names: set[str] = set()
    for n in graph.node:
        names.update(n.input)
        for a in n.attribute:
            for g in (*([a.g] if a.HasField("g") else []), *a.graphs):
                names |= _read(g)
    return names


__all__ = ["HALF_STEP_TOLERANCE", "half_step_grid", "half_step_inputs", "keep_inputs_float"]
