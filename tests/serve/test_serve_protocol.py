"""The v2 request parser and the bind/token rules, without a server: every fault is a 400 naming its field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from edgekit.core.artifact import QuantParams, TensorSpec
from edgekit.core.errors import UsageError
from edgekit.serve.config import ServeConfig, is_loopback, read_token
from edgekit.serve.errors import RequestError
from edgekit.serve.protocol import encode_infer, parse_infer
from edgekit.serve.tensors import wire_tensors

FLOAT_IN = wire_tensors([TensorSpec("x", [-1, 1, 2, 2], "float32", "NCHW")])
INT8_IN = wire_tensors([TensorSpec("x", [1, 2, 2, 1], "int8", "NHWC", QuantParams(scale=0.5, zero_point=-3))])
OUTS = wire_tensors([TensorSpec("y", [-1, 3], "float32")])


def _req(**item) -> bytes:
    base = {"name": "x", "shape": [1, 1, 2, 2], "datatype": "FP32", "data": [0.0, 0.25, 0.5, 1.0]}
    base.update(item)
    return json.dumps({"inputs": [base]}).encode()


def _fault(body: bytes, inputs=FLOAT_IN, header: str | None = None) -> RequestError:
    with pytest.raises(RequestError) as info:
        parse_infer(body, header, inputs, OUTS)
    assert info.value.status == 400
    return info.value


def test_json_tensor_nested_or_flat_is_read_in_the_models_dtype() -> None:
    flat = parse_infer(_req(), None, FLOAT_IN, OUTS).inputs["x"]
    nested = parse_infer(_req(data=[[[[0.0, 0.25], [0.5, 1.0]]]]), None, FLOAT_IN, OUTS).inputs["x"]
    assert flat.dtype == np.float32 and flat.shape == (1, 1, 2, 2)
    np.testing.assert_array_equal(flat, nested)


def test_fp32_for_a_quantized_input_is_quantized_with_its_scale_and_raw_int8_passes_as_given() -> None:
    got = parse_infer(_req(shape=[1, 2, 2, 1]), None, INT8_IN, OUTS).inputs["x"]
    assert got.dtype == np.int8 and got.ravel().tolist() == [-3, -2, -2, -1]  # round(x / 0.5) - 3
    raw = parse_infer(_req(shape=[1, 2, 2, 1], datatype="INT8", data=[1, 2, 3, 4]), None, INT8_IN, OUTS).inputs["x"]
    assert raw.ravel().tolist() == [1, 2, 3, 4]
    assert INT8_IN[0].metadata() == {"name": "x", "datatype": "FP32", "shape": [1, 2, 2, 1]}


@pytest.mark.parametrize(("body", "field"), [
    (_req(name="nope"), "inputs[0].name"),
    (_req(shape=[1, 3, 2, 2]), "inputs[0].shape"),
    (_req(shape=[1, 1, 2]), "inputs[0].shape"),
    (_req(shape="1,1,2,2"), "inputs[0].shape"),
    (_req(datatype="INT32", data=[1, 2, 3, 4]), "inputs[0].datatype"),
    (_req(datatype="FLOAT"), "inputs[0].datatype"),
    (_req(datatype="BYTES"), "inputs[0].datatype"),
    (_req(data=[1.0, 2.0]), "inputs[0].data"),
    (_req(data=[1.0, "a", 2.0, 3.0]), "inputs[0].data"),
    (_req(data=[[1.0, 2.0], [3.0]]), "inputs[0].data"),
    (_req(data={"a": 1}), "inputs[0].data"),
    (b'{"inputs": [', "body"),
    (b"\xff\xfe", "body"),
    (b"[" * 100_000 + b"]" * 100_000, "body"),
    (b"[1, 2]", "body"),
    (b'{"inputs": []}', "inputs"),
    (json.dumps({"inputs": [{"name": "x", "shape": [1, 1, 2, 2], "datatype": "FP32", "data": [0] * 4}],
                 "outputs": [{"name": "z"}]}).encode(), "outputs[0].name"),
])
def test_each_fault_is_a_400_naming_the_field(body: bytes, field: str) -> None:
    assert _fault(body).field == field


def test_nan_or_inf_for_a_quantized_input_is_refused_json_and_binary() -> None:
    body = _req(shape=[1, 2, 2, 1], data=[0.0, 1.0, float("nan"), 2.0]).replace(b"NaN", b"NaN")
    assert _fault(body, INT8_IN).field == "inputs[0].data"
    head = json.dumps({"inputs": [{"name": "x", "shape": [1, 2, 2, 1], "datatype": "FP32",
                                   "parameters": {"binary_data_size": 16}}]}).encode()
    blob = np.array([0, np.inf, 1, 2], np.float32).tobytes()
    assert _fault(head + blob, INT8_IN, str(len(head))).field == "inputs[0].data"


def test_binary_tensors_and_wrong_sizes() -> None:
    head = json.dumps({"inputs": [{"name": "x", "shape": [2, 1, 2, 2], "datatype": "FP32",
                                   "parameters": {"binary_data_size": 32}}],
                       "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
    x = np.arange(8, dtype=np.float32)
    req = parse_infer(head + x.tobytes(), str(len(head)), FLOAT_IN, OUTS)
    np.testing.assert_array_equal(req.inputs["x"].ravel(), x)
    assert _fault(head + x.tobytes()[:-4], header=str(len(head))).field == "inputs[0].parameters.binary_data_size"
    assert _fault(head + x.tobytes() + b"xx", header=str(len(head))).field == "body"
    assert _fault(head + x.tobytes(), header="999999").field == "Inference-Header-Content-Length"
    body, n = encode_infer("m", "1", req, {"y": np.ones((2, 3), np.float32)})
    assert n is not None and json.loads(body[:n])["outputs"][0]["parameters"]["binary_data_size"] == 24
    np.testing.assert_array_equal(np.frombuffer(body[n:], np.float32), np.ones(6))


def test_json_output_and_the_request_id_round_trip() -> None:
    req = parse_infer(json.dumps({"id": "r1", "inputs": json.loads(_req())["inputs"]}).encode(), None, FLOAT_IN,
                      OUTS)
    body, n = encode_infer("m", "1", req, {"y": np.array([[1.5, float("nan"), 2]], np.float32)})
    doc = json.loads(body)
    assert n is None and doc["id"] == "r1" and doc["outputs"][0]["data"] == [1.5, "nan", 2.0]


@pytest.mark.parametrize(("host", "loop"), [("127.0.0.1", True), ("127.0.0.5", True), ("::1", True),
                                             ("localhost", True), ("0.0.0.0", False), ("::", False),
                                             ("192.168.1.20", False), ("pi.local", False)])
def test_only_loopback_is_loopback(host: str, loop: bool) -> None:
    assert is_loopback(host) is loop


def test_remote_bind_needs_allow_remote_and_a_token(tmp_path) -> None:
    with pytest.raises(UsageError, match="--allow-remote"):
        ServeConfig(host="0.0.0.0").check()
    with pytest.raises(UsageError, match="needs a token"):
        ServeConfig(host="0.0.0.0", allow_remote=True).check()
    ServeConfig(host="0.0.0.0", allow_remote=True, token="x" * 32).check()
    f = tmp_path / "token"
    f.write_text("  " + "a" * 20 + "\n")
    assert read_token(f, "ignored-when-a-file-is-given") == "a" * 20
    assert read_token(None, "b" * 16) == "b" * 16 and read_token(None, None) is None
    with pytest.raises(UsageError, match="shorter"):
        read_token(None, "short")


def test_json_depth_counts_brackets_outside_strings_only() -> None:
    from edgekit.core.jsonsafe import depth as json_depth
    from edgekit.serve.protocol import MAX_JSON_DEPTH

    tricky = json.dumps({"s": 'a "quoted" [[[' * 40 + "\\", "d": [[[1]]], "t": "]]]" * 40}).encode()
    assert json_depth(tricky) == 4  # the object and three lists; 120 '[' inside strings are not nesting
    assert json_depth(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)) == MAX_JSON_DEPTH + 1


def _png(array: np.ndarray) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def test_a_picture_becomes_the_input_as_the_manifest_says() -> None:
    from edgekit.core.artifact import Preprocessing
    from edgekit.serve.image import image_input

    rgb = np.array([[[255, 0, 51], [0, 255, 0]], [[0, 0, 255], [255, 255, 255]]], np.uint8)  # 2x2
    spec = TensorSpec("x", [1, 3, 2, 2], "float32", "NCHW")
    pre = Preprocessing(color="RGB", size=[2, 2], mean=[0.5, 0.5, 0.5], std=[0.25, 0.5, 1.0])
    x = image_input(_png(rgb), spec, pre, max_pixels=4)
    want = ((rgb.astype(np.float32) / 255 - 0.5) / np.array([0.25, 0.5, 1.0], np.float32)).transpose(2, 0, 1)[None]
    np.testing.assert_allclose(x, want, rtol=1e-6)
    nhwc = image_input(_png(rgb), TensorSpec("x", [1, 2, 2, 3], "float32", "NHWC"), None, max_pixels=4)
    np.testing.assert_allclose(nhwc[0], rgb / 255, rtol=1e-6)  # no manifest: pixels/255
    with pytest.raises(RequestError) as bomb:
        image_input(_png(np.zeros((3, 2), np.uint8)), spec, pre, max_pixels=4)
    assert bomb.value.status == 413  # refused from the header: 6 pixels > 4
    with pytest.raises(RequestError) as gif:
        image_input(b"GIF89a....", spec, pre, max_pixels=4)
    assert gif.value.status == 415


def test_a_trickled_body_times_out_and_an_endless_one_is_cut_at_the_limit() -> None:
    import asyncio

    pytest.importorskip("starlette")
    from starlette.requests import Request

    from edgekit.serve.app import read_body

    def request(delay: float) -> Request:
        async def receive() -> dict:
            await asyncio.sleep(delay)
            return {"type": "http.request", "body": b"x" * 60, "more_body": True}  # never ends

        return Request({"type": "http", "method": "POST", "headers": [], "path": "/"}, receive)

    with pytest.raises(RequestError) as slow:
        asyncio.run(read_body(request(0.2), limit=10_000, timeout_s=0.5))
    assert slow.value.status == 408
    with pytest.raises(RequestError) as big:
        asyncio.run(read_body(request(0.0), limit=100, timeout_s=5))
    assert big.value.status == 413


def test_the_classification_extension_as_json_and_binary_bytes() -> None:
    doc = json.loads(_req())
    doc["outputs"] = [{"name": "y", "parameters": {"classification": 2, "binary_data": False}}]
    req = parse_infer(json.dumps(doc).encode(), None, FLOAT_IN, OUTS)
    scores = np.array([[0.1, 2.5, -1.0], [3.0, 0.0, 1.0]], np.float32)
    body, n = encode_infer("m", "1", req, {"y": scores}, ["cat", "dog", "emu"])
    out = json.loads(body)["outputs"][0]
    assert n is None and out["datatype"] == "BYTES" and out["shape"] == [2, 2]
    assert out["data"] == ["2.500000:1:dog", "0.100000:0:cat", "3.000000:0:cat", "1.000000:2:emu"]
    req.outputs[0].binary = True
    body, n = encode_infer("m", "1", req, {"y": scores}, None)
    utils = pytest.importorskip("tritonclient.utils")
    got = utils.deserialize_bytes_tensor(body[n:]).tolist()
    assert got == [b"2.500000:1", b"0.100000:0", b"3.000000:0", b"1.000000:2"]
    doc["outputs"][0]["parameters"]["classification"] = "two"
    assert _fault(json.dumps(doc).encode()).field == "outputs[0].parameters.classification"
