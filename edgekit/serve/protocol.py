"""KServe v2 inference requests and responses: JSON tensors and the binary tensor data extension.

Request: a JSON object `{"id"?, "parameters"?, "inputs": [{"name", "shape", "datatype", "data" |
"parameters": {"binary_data_size": n}}], "outputs"?: [{"name", "parameters"?: {"binary_data": bool}}]}`.
With the binary extension the HTTP header `Inference-Header-Content-Length: N` says the first N
bytes are that JSON and the rest is the raw little-endian tensors, in input order. Responses use
binary for an output when the request asked (`binary_data` per output, or `binary_data_output` for
all), as tritonclient does by default. Every fault is a 400 naming the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgekit.core import jsonsafe
from edgekit.serve.errors import bad_request
from edgekit.serve.tensors import DATATYPES, KNOWN_DATATYPES, WireTensor, by_any_name, datatype_of

HEADER_LENGTH = "inference-header-content-length"
MAX_DIMS = 16  # no CNN input has more; bounds the nesting of JSON data as well
MAX_JSON_DEPTH = 64  # request object + inputs list + tensor + MAX_DIMS levels of data, with room to spare


@dataclass
class Requested:
    """One output the client asked for, whether as binary, and whether as its top classes (classification)."""

    name: str  # as the request named it (the served name or an alias): the response answers under it
    binary: bool
    classes: int = 0  # the classification extension: the CLASSES best as "score:index[:label]" strings
    tensor: str = ""  # the served name of the output it is (the key of the results); NAME when empty


@dataclass
class InferRequest:
    id: str | None
    inputs: dict[str, np.ndarray]  # by served name, in the model's dtypes, shapes checked
    outputs: list[Requested]


def load_json(data: bytes, what: str = "body") -> Any:
    """JSON from DATA, or a 400: malformed, not UTF-8, or nested deeper than MAX_JSON_DEPTH (edgekit.core.jsonsafe)."""
    try:
        return jsonsafe.loads(data, MAX_JSON_DEPTH)
    except jsonsafe.TooDeep:
        raise bad_request(f"the JSON nests deeper than {MAX_JSON_DEPTH} levels.", what) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad_request(f"the request is not valid JSON: {exc}.", what) from None


def _split(body: bytes, header_length: str | None) -> tuple[Any, memoryview]:
    if header_length is None:
        return load_json(body), memoryview(b"")
    try:
        n = int(header_length)
    except ValueError:
        n = -1
    if n < 0 or n > len(body):
        raise bad_request(f"Inference-Header-Content-Length is {header_length!r}, but the body has {len(body)} "
                          "bytes.", "Inference-Header-Content-Length")
    return load_json(body[:n]), memoryview(body)[n:]


def _shape(item: dict[str, Any], where: str) -> list[int]:
    shape = item.get("shape")
    if (not isinstance(shape, list) or len(shape) > MAX_DIMS
            or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise bad_request(f"'shape' must be a list of at most {MAX_DIMS} non-negative integers, got {shape!r}.",
                          f"{where}.shape")
    return shape


def _datatype(item: dict[str, Any], where: str) -> str:
    dt = item.get("datatype")
    if not isinstance(dt, str) or dt not in KNOWN_DATATYPES:
        raise bad_request(f"unknown datatype {dt!r}; v2 datatypes are {', '.join(KNOWN_DATATYPES)}.",
                          f"{where}.datatype")
    if dt not in DATATYPES:
        raise bad_request(f"datatype {dt} is not served: numeric tensors only.", f"{where}.datatype")
    return dt


def _json_data(data: Any, dtype: np.dtype, count: int, where: str) -> np.ndarray:
    if not isinstance(data, list):
        raise bad_request("'data' must be a list of numbers (flat, or nested as the shape).", f"{where}.data")
    try:
        arr = np.asarray(data, dtype=dtype if dtype.kind != "b" else None)
    except (ValueError, TypeError, OverflowError) as exc:
        raise bad_request(f"'data' must hold {dtype.name} numbers in a regular nesting: {exc}.",
                          f"{where}.data") from None
    if arr.dtype == object or arr.ndim > MAX_DIMS or (dtype.kind == "b" and arr.size and arr.dtype.kind != "b"):
        raise bad_request(f"'data' must hold {dtype.name} values in a regular nesting.", f"{where}.data")
    if arr.size != count:
        raise bad_request(f"'data' holds {arr.size} values but the shape asks for {count}.", f"{where}.data")
    return arr.astype(dtype, copy=False)


def parse_infer(body: bytes, header_length: str | None, inputs: list[WireTensor],
                outputs: list[WireTensor]) -> InferRequest:
    """A v2 request for a model with INPUTS and OUTPUTS, checked field by field."""
    doc, rest = _split(body, header_length)
    if not isinstance(doc, dict):
        raise bad_request("the request must be a JSON object with an 'inputs' list.", "body")
    items = doc.get("inputs")
    if not isinstance(items, list) or not items:
        raise bad_request("'inputs' must be a non-empty list of tensors.", "inputs")
    by_name = by_any_name(inputs)  # the served names, and the artifact's own as aliases
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    for i, item in enumerate(items):
        where = f"inputs[{i}]"
        if not isinstance(item, dict):
            raise bad_request("each input must be an object with name, shape, datatype and data.", where)
        name = item.get("name")
        if not isinstance(name, str) or name not in by_name:  # a list or an object cannot be looked up
            raise bad_request(f"the model has no input {name!r}; its inputs are {[t.name for t in inputs]}.",
                              f"{where}.name")
        wire = by_name[name]
        if wire.name in arrays:
            raise bad_request(f"input {name!r} is given twice.", f"{where}.name")
        shape, dt = _shape(item, where), _datatype(item, where)
        wire.check_shape(shape, where)
        if dt not in wire.accepted:
            raise bad_request(f"input '{name}' takes datatype {' or '.join(wire.accepted)}, got {dt}.",
                              f"{where}.datatype")
        dtype = np.dtype(DATATYPES[dt]).newbyteorder("<")
        count = math.prod(shape)
        given = item.get("parameters")
        params = given if isinstance(given, dict) else {}
        size = params.get("binary_data_size")
        if size is not None:
            if not isinstance(size, int) or size != count * dtype.itemsize or offset + size > len(rest):
                raise bad_request(f"binary_data_size {size!r} does not fit shape {shape} of {dt} "
                                  f"({count * dtype.itemsize} bytes) or the {len(rest) - offset} bytes left.",
                                  f"{where}.parameters.binary_data_size")
            arr = np.frombuffer(rest[offset:offset + size], dtype=dtype)
            offset += size
        else:
            arr = _json_data(item.get("data"), dtype, count, where)
        arrays[wire.name] = wire.to_model(arr.reshape(shape).astype(dtype.newbyteorder("="), copy=False), dt, where)
    if offset != len(rest):
        raise bad_request(f"{len(rest) - offset} bytes of binary data after the last tensor.", "body")
    missing = [t.name for t in inputs if t.name not in arrays]
    if missing:
        raise bad_request(f"missing input(s) {missing}.", "inputs")
    return InferRequest(id=_id(doc), inputs=arrays, outputs=_requested(doc, outputs))


def _id(doc: dict[str, Any]) -> str | None:
    rid = doc.get("id")
    if rid is not None and not isinstance(rid, str):
        raise bad_request("'id' must be a string.", "id")
    return rid


def _requested(doc: dict[str, Any], outputs: list[WireTensor]) -> list[Requested]:
    given = doc.get("parameters")
    params = given if isinstance(given, dict) else {}
    binary_all = bool(params.get("binary_data_output", False))
    items = doc.get("outputs")
    if items is None:
        return [Requested(t.name, binary_all) for t in outputs]
    if not isinstance(items, list):
        raise bad_request("'outputs' must be a list.", "outputs")
    names = by_any_name(outputs)  # the served names, and the artifact's own as aliases
    out = []
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or name not in names:  # {"name": {...}} was a TypeError (issue 12's fuzz)
            raise bad_request(f"the model has no output {name!r}; its outputs are {sorted(t.name for t in outputs)}.",
                              f"outputs[{i}].name")
        p = item.get("parameters") if isinstance(item.get("parameters"), dict) else {}
        classes = p.get("classification", 0)
        if not isinstance(classes, int) or isinstance(classes, bool) or classes < 0:
            raise bad_request(f"'classification' must be a whole number of classes, got {classes!r}.",
                              f"outputs[{i}].parameters.classification")
        out.append(Requested(name, bool(p.get("binary_data", binary_all)), classes, names[name].name))
    return out


def classify_output(scores: np.ndarray, k: int, labels: list[str] | None) -> np.ndarray:
    """Triton's classification extension: per sample (first dim) the K highest scores as "value:index[:label]"."""
    rows = scores.reshape(scores.shape[0], -1) if scores.ndim > 1 else scores.reshape(1, -1)
    k = min(k, rows.shape[1])
    out = []
    for row in rows.astype(np.float64):
        order = np.argsort(-row, kind="stable")[:k]
        out.append([f"{row[i]:f}:{i}" + (f":{labels[i]}" if labels and i < len(labels) else "") for i in order])
    return np.array(out, dtype=object).reshape((k,) if scores.ndim <= 1 else (rows.shape[0], k))


def _bytes_tensor(arr: np.ndarray) -> bytes:
    """BYTES elements as the v2 binary extension frames them: a 4-byte little-endian length, then the bytes."""
    parts = []
    for item in arr.ravel():
        raw = item.encode() if isinstance(item, str) else bytes(item)
        parts += [len(raw).to_bytes(4, "little"), raw]
    return b"".join(parts)


def _json_safe(arr: np.ndarray) -> list[Any]:
    flat = arr.ravel()
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        return [v if math.isfinite(v) else str(v) for v in flat.tolist()]  # JSON has no NaN/inf
    return flat.tolist()


def encode_infer(model: str, version: str, request: InferRequest, results: dict[str, np.ndarray],
                 labels: list[str] | None = None) -> tuple[bytes, int | None]:
    """The response body, and the JSON header's length when binary tensors follow it."""
    outs: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for req in request.outputs:
        arr = results[req.tensor or req.name]
        arr = classify_output(arr, req.classes, labels) if req.classes else np.ascontiguousarray(arr)
        entry: dict[str, Any] = {"name": req.name, "datatype": "BYTES" if req.classes else datatype_of(arr.dtype.name),
                                 "shape": list(arr.shape)}
        if req.binary:
            raw = _bytes_tensor(arr) if req.classes else arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
            entry["parameters"] = {"binary_data_size": len(raw)}
            blobs.append(raw)
        else:
            entry["data"] = arr.ravel().tolist() if req.classes else _json_safe(arr)
        outs.append(entry)
    doc: dict[str, Any] = {"model_name": model, "model_version": version, "outputs": outs}
    if request.id is not None:
        doc["id"] = request.id
    head = json.dumps(doc, separators=(",", ":")).encode()
    if not blobs:
        return head, None
    return b"".join([head, *blobs]), len(head)


__all__ = ["HEADER_LENGTH", "InferRequest", "Requested", "encode_infer", "load_json", "parse_infer"]
