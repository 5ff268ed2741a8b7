"""A real server process driven by tritonclient (a client nobody here wrote) and httpx.

Inference over the wire must equal the in-process runtime's on the same artifact, JSON and binary;
every bad input gets its status code and the server keeps serving; the queue bound gives 503s.
"""

from __future__ import annotations

import concurrent.futures
import io
import json
import re
import time

import httpx
import numpy as np
import pytest

tritonhttp = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402


@pytest.fixture(scope="module")
def client(served):
    c = tritonhttp.InferenceServerClient(served.url, concurrency=4)
    yield c
    c.close()


def _runtime(path):
    from edgekit.runtimes import open_runtime

    return open_runtime(path, device="cpu")


def _png(array: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def _still_serving(served) -> None:
    r = httpx.post(f"{served.base}/v2/models/mnist_cnn-fp32/infer", json=_infer_json())
    assert r.status_code == 200, r.text


def test_health_metadata_and_names(served, client) -> None:
    assert served.ready_s < 10  # the 2 s target is measured by bench/serve.py on an idle machine
    assert client.is_server_live() and client.is_server_ready()
    meta = client.get_server_metadata()
    assert meta["name"] == "edgekit" and "binary_tensor_data" in meta["extensions"]
    assert sorted(meta["models"]) == ["broken", "mnist_cnn-fp32", "mnist_cnn-int8"]
    assert client.is_model_ready("mnist_cnn-int8") and not client.is_model_ready("nope")
    int8 = client.get_model_metadata("mnist_cnn-int8")
    # the folder served its int8 TFLite (the CPU choice); the quantized input is offered as FP32
    assert int8["platform"] == "tensorflow_lite" and int8["parameters"]["precision"] == "int8"
    assert int8["inputs"][0]["datatype"] == "FP32" and int8["inputs"][0]["shape"] == [1, 28, 28, 1]
    assert int8["parameters"]["preprocessing"]["size"] == [28, 28]
    fp32 = client.get_model_metadata("mnist_cnn-fp32", model_version="1")
    # the source's names for every artifact (test_serve_names.py), the ONNX's own too
    assert fp32["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, 1, 28, 28]}]
    with pytest.raises(InferenceServerException, match="no model named"):
        client.get_model_metadata("nope")
    config = client.get_model_config("mnist_cnn-fp32")  # Triton's own endpoint, as tritonclient reads it
    assert config["input"] == [{"name": "input", "data_type": "TYPE_FP32", "dims": [-1, 1, 28, 28]}]
    assert config["max_batch_size"] == 0 and config["instance_group"][0]["kind"] == "KIND_CPU"


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
@pytest.mark.parametrize("model", ["mnist_cnn-int8", "mnist_cnn-fp32"])
def test_inference_equals_the_in_process_runtime(served, client, model: str, binary: bool) -> None:
    from edgekit.data.calibration import mnist_split

    meta = client.get_model_metadata(model)
    path = served.folder / meta["parameters"]["path"]
    inp, out = meta["inputs"][0], meta["outputs"][0]
    digits = mnist_split()[2][:4].astype(np.float32) / 255  # real test digits
    rt = _runtime(path)
    for digit in digits:
        x = digit.reshape([1 if d < 0 else d for d in inp["shape"]])
        infer_in = tritonhttp.InferInput(inp["name"], list(x.shape), "FP32")
        infer_in.set_data_from_numpy(x, binary_data=binary)
        result = client.infer(model, [infer_in], outputs=[tritonhttp.InferRequestedOutput(out["name"],
                                                                                          binary_data=binary)])
        own = meta["parameters"]["artifact_names"]  # the runtime knows the artifact's own names
        want = rt.run_float({own["inputs"][inp["name"]]: x})[own["outputs"][out["name"]]]
        np.testing.assert_array_equal(result.as_numpy(out["name"]), want)
    rt.close()


def test_tritonclient_class_count_gets_the_top_classes_with_labels(served, client) -> None:
    from edgekit.data.calibration import mnist_split

    meta = client.get_model_metadata("mnist_cnn-int8")
    inp, out = meta["inputs"][0], meta["outputs"][0]
    x = (mnist_split()[2][:1].astype(np.float32) / 255).reshape(inp["shape"])
    infer_in = tritonhttp.InferInput(inp["name"], inp["shape"], "FP32")
    infer_in.set_data_from_numpy(x)
    scores = client.infer("mnist_cnn-int8", [infer_in]).as_numpy(out["name"])[0]
    top = client.infer("mnist_cnn-int8", [infer_in], outputs=[tritonhttp.InferRequestedOutput(
        out["name"], class_count=3)]).as_numpy(out["name"])
    assert top.shape == (1, 3)
    value, index, label = top[0, 0].decode().split(":")
    names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    assert int(index) == int(scores.argmax()) and label == names[int(index)]
    assert float(value) == pytest.approx(float(scores.max()), abs=1e-5)


def test_a_dynamic_batch_runs_in_one_request(served, client) -> None:
    from edgekit.data.calibration import mnist_split

    x = (mnist_split()[2][:8].astype(np.float32) / 255)[:, None]
    infer_in = tritonhttp.InferInput("input", list(x.shape), "FP32")
    infer_in.set_data_from_numpy(x)
    out = client.get_model_metadata("mnist_cnn-fp32")["outputs"][0]["name"]
    got = client.infer("mnist_cnn-fp32", [infer_in]).as_numpy(out)
    assert got.shape == (8, 10)
    assert (got.argmax(1) == mnist_split()[3][:8]).mean() >= 0.75


def test_classify_real_digits_and_a_real_photo(served) -> None:
    from edgekit.data.calibration import mnist_split

    x_test, y_test = mnist_split()[2][:20], mnist_split()[3][:20]
    right = 0
    for img, label in zip(x_test, y_test, strict=True):
        r = httpx.post(f"{served.base}/v2/models/mnist_cnn-int8/classify?top_k=3", content=_png(img),
                       headers={"content-type": "image/png"})
        assert r.status_code == 200, r.text
        preds = r.json()["predictions"]
        assert len(preds) == 3 and preds[0]["score"] >= preds[1]["score"]
        names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
        right += preds[0]["label"] == names[label]
    assert right >= 17  # the int8 model is ~98% accurate on these digits
    assert r.json()["preprocessing"] == "as the manifest records"
    # multipart upload of a real JPEG photo (skimage): decoded, made grey, resized; an answer, not an error
    skimage_data = pytest.importorskip("skimage.data")
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(skimage_data.camera()[::2, ::2]).save(buf, format="JPEG")
    r = httpx.post(f"{served.base}/v2/models/mnist_cnn-int8/classify",
                   files={"image": ("camera.jpg", buf.getvalue(), "image/jpeg")})
    assert r.status_code == 200, r.text
    assert len(r.json()["predictions"]) == 5


def _post(served, path: str, **kw) -> httpx.Response:
    return httpx.post(f"{served.base}{path}", timeout=30, **kw)


def _infer_json(name="input", shape=(1, 1, 28, 28), datatype="FP32", data=None) -> dict:
    n = int(np.prod(shape))
    return {"inputs": [{"name": name, "shape": list(shape), "datatype": datatype,
                        "data": data if data is not None else [0.5] * n}]}


BAD = [
    ("wrong name", "/v2/models/mnist_cnn-fp32/infer", {"json": _infer_json(name="image")}, 400, "inputs[0].name"),
    ("wrong shape", "/v2/models/mnist_cnn-fp32/infer", {"json": _infer_json(shape=(1, 3, 28, 28))}, 400,
     "inputs[0].shape"),
    ("wrong dtype", "/v2/models/mnist_cnn-fp32/infer", {"json": _infer_json(datatype="INT64")}, 400,
     "inputs[0].datatype"),
    ("unknown datatype", "/v2/models/mnist_cnn-fp32/infer", {"json": _infer_json(datatype="float")}, 400,
     "inputs[0].datatype"),
    ("NaN, quantized", "/v2/models/mnist_cnn-int8/infer",
     {"content": json.dumps(_infer_json("serving_default_input:0", (1, 28, 28, 1), data=[float("nan")] * 784))},
     400, "inputs[0].data"),
    ("malformed JSON", "/v2/models/mnist_cnn-fp32/infer", {"content": b'{"inputs": [{"name": '}, 400, "body"),
    ("deep JSON", "/v2/models/mnist_cnn-fp32/infer", {"content": b"[" * 50_000 + b"]" * 50_000}, 400, "body"),
    ("too big", "/v2/models/mnist_cnn-fp32/infer", {"content": b"0" * (1024 * 1024 + 1)}, 413, "body"),
    ("not an image", "/v2/models/mnist_cnn-int8/classify", {"content": b"GIF89a not a png"}, 415, "body"),
    ("pixel bomb", "/v2/models/mnist_cnn-int8/classify", {"content": _png(np.zeros((1200, 1000), np.uint8))}, 413,
     "body"),
    ("bad top_k", "/v2/models/mnist_cnn-int8/classify?top_k=0", {"content": b""}, 400, "top_k"),
    ("detect on a classifier", "/v2/models/mnist_cnn-int8/detect", {"content": _png(np.zeros((28, 28), np.uint8))},
     400, "model"),
    ("unknown model", "/v2/models/nope/infer", {"json": _infer_json()}, 404, "model"),
    ("failing inference", "/v2/models/broken/infer",
     {"json": {"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32", "data": [1.0] * 8}]}}, 500, None),
]


@pytest.mark.parametrize(("what", "path", "kw", "status", "field"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_gets_its_status_and_the_server_keeps_serving(served, what, path, kw, status, field) -> None:
    r = _post(served, path, **kw)
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error"] and body.get("field") == field
    if what == "detect on a classifier":  # says what /detect needs, and where a classifier goes instead
        assert "not a detector" in body["error"] and "/classify" in body["error"] and "/infer" in body["error"]
    _still_serving(served)


def test_a_failing_model_still_answers_the_next_good_request(served) -> None:
    r = _post(served, "/v2/models/broken/infer",
              json={"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [1.0, 2, 3, 4]}]})
    assert r.status_code == 200 and r.json()["outputs"][0]["data"] == [1.0, 2.0, 3.0, 4.0]


def test_a_full_queue_answers_503_with_retry_after_at_once(served) -> None:
    # --max-queue 2, one worker: a burst of 24 large batches cannot all wait; the excess is refused at once
    x = np.random.default_rng(0).random((1024, 1, 28, 28), dtype=np.float32)
    head = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                   "parameters": {"binary_data_size": x.nbytes}}]}).encode()
    headers = {"Inference-Header-Content-Length": str(len(head)), "content-type": "application/octet-stream"}
    body = head + x.tobytes()
    if len(body) > 1024 * 1024:  # the module server takes at most 1 MiB: send what fits
        x = x[: (1024 * 1024 - len(head) - 64) // (28 * 28 * 4)]
        head = json.dumps({"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                                       "parameters": {"binary_data_size": x.nbytes}}]}).encode()
        headers["Inference-Header-Content-Length"] = str(len(head))
        body = head + x.tobytes()

    def one(_: int) -> httpx.Response:
        return httpx.post(f"{served.base}/v2/models/mnist_cnn-fp32/infer", content=body, headers=headers, timeout=60)

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        answers = list(pool.map(one, range(24)))
    codes = [r.status_code for r in answers]
    assert set(codes) <= {200, 503} and codes.count(503) > 0 and codes.count(200) > 0, codes
    refused = next(r for r in answers if r.status_code == 503)
    assert refused.headers["retry-after"] and "max-queue" in refused.json()["error"]
    _still_serving(served)


def test_metrics_count_requests_by_model_and_code(served) -> None:
    _still_serving(served)
    # its own requests, one answered and one refused, so the counts do not rest on the tests that ran before it
    assert _post(served, "/v2/models/mnist_cnn-fp32/infer", json=_infer_json()).status_code == 200
    assert _post(served, "/v2/models/mnist_cnn-fp32/infer", json=_infer_json(shape=(1, 2))).status_code == 400
    text = httpx.get(f"{served.base}/metrics").text
    assert 'edgekit_requests_total{code="200",endpoint="infer",model="mnist_cnn-fp32"}' in text
    assert 'code="400"' in text and "edgekit_queue_seconds_bucket" in text and "edgekit_inference_seconds" in text
    assert 'edgekit_model_load_seconds{model="mnist_cnn-int8"}' in text and "edgekit_queue_depth" in text


def test_dynamic_batching_runs_concurrent_requests_together_with_the_same_answers(served) -> None:
    """--max-batch 4 on the module server: the fp32 ONNX (dynamic batch) runs concurrent requests as one batch."""
    from edgekit.data.calibration import mnist_split

    digits = (mnist_split()[2][:4].astype(np.float32) / 255)[:, None, None]  # 4 requests of (1, 1, 28, 28)
    rt = _runtime(served.folder / "mnist_cnn.fp32.onnx")
    out = rt.outputs[0].name
    want = [rt.run_float({"input": d})[out] for d in digits]
    rt.close()

    def one(d: np.ndarray) -> np.ndarray:
        for _ in range(20):  # as a client does on a 503: the module server's queue holds 2 (--max-queue), and
            # on a loaded CI machine the previous test's requests may still hold their places for a moment
            r = _post(served, "/v2/models/mnist_cnn-fp32/infer", json=_infer_json(data=d.ravel().tolist()))
            if r.status_code != 503:
                break
            time.sleep(0.05)
        assert r.status_code == 200, r.text
        return np.asarray(r.json()["outputs"][0]["data"], np.float32).reshape(1, 10)

    def batched() -> float:
        text = httpx.get(f"{served.base}/metrics").text
        count = float(re.search(r'edgekit_batch_size_count{model="mnist_cnn-fp32"} (\S+)', text).group(1))
        total = float(re.search(r'edgekit_batch_size_sum{model="mnist_cnn-fp32"} (\S+)', text).group(1))
        return total - count  # 0 while every batch held one request

    before = batched()
    for _ in range(3):  # a loaded machine may serialise one burst; three bursts do not all
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            got = list(pool.map(one, digits))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
        if batched() > before:
            break
    assert batched() > before, "no two requests ever ran in one batch"
