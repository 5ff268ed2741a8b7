"""Every artifact of a conversion answers with the source's tensor names, and takes its own as aliases.

The pairing rules on records as conversions write them (the TFLite int8 of the bundled CNN, a two-output
model whose .tflite swaps its outputs), then one tritonclient function against a real server holding the
int8 TFLite and the fp32 ONNX of the bundled model: same names from both, and the TFLite's own names
still accepted.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from edgekit.core.artifact import Artifact, Fidelity, OutputFidelity, SourceInfo, SourceInput, TensorSpec
from edgekit.serve.errors import RequestError
from edgekit.serve.names import aliases, renaming
from edgekit.serve.protocol import parse_infer
from edgekit.serve.tensors import by_any_name, wire_tensors


def _artifact(pairs: list[tuple[str, str]]) -> Artifact:
    fid = Fidelity(samples=1, top1_agreement=1.0, cosine=1.0, max_abs_error=0.0,
                   outputs=[OutputFidelity(name=s, shape=[1, 10], dtype="float32", kind="classes", artifact_name=a)
                            for s, a in pairs])
    return Artifact(path="m.tflite", format="tflite", precision="int8", inputs=[], outputs=[], size_bytes=0,
                    sha256="", fidelity=fid)


SOURCE = SourceInfo(input=SourceInput(name="input", shape=[-1, 1, 28, 28], dtype="float32"), outputs=["output"])


def test_the_tflite_int8_of_the_bundled_cnn_answers_as_its_source() -> None:
    names = renaming(_artifact([("output", "PartitionedCall:0")]), SOURCE, ["serving_default_x:0"],
                     ["PartitionedCall:0"])
    assert names.inputs == {"serving_default_x:0": "input"} and names.outputs == {"PartitionedCall:0": "output"}
    # the artifact's own name, and the signature key inside it, are accepted as well
    assert aliases("serving_default_x:0", "input") == ("serving_default_x:0", "x")
    assert aliases("output", "output") == ()


def test_outputs_follow_the_fidelity_records_not_the_order() -> None:
    """A .tflite returns a two-output model's tensors as PartitionedCall:1, :0: the records say which is which."""
    source = SourceInfo(input=SourceInput(name="input"), outputs=["output_0", "output_1"])
    art = _artifact([("output_0", "PartitionedCall:0"), ("output_1", "PartitionedCall:1")])
    names = renaming(art, source, ["serving_default_x:0"], ["PartitionedCall:1", "PartitionedCall:0"])
    assert names.outputs == {"PartitionedCall:1": "output_1", "PartitionedCall:0": "output_0"}


def test_inputs_pair_by_name_then_normalised_name_and_unpaired_or_clashing_names_stay() -> None:
    source = SourceInfo(inputs=[SourceInput(name="image"), SourceInput(name="im_info")], outputs=["a", "b"])
    names = renaming(None, source, ["serving_default_im_info:0", "image"], ["y", "z"])
    assert names.inputs == {"serving_default_im_info:0": "im_info", "image": "image"}
    assert names.outputs == {"y": "y", "z": "z"}  # two outputs, no record: nothing to pair them by
    # two artifact inputs that would both be "x": neither is renamed
    clash = renaming(None, SourceInfo(inputs=[SourceInput(name="x")]), ["X:0", "x:1"], [])
    assert clash.inputs == {"X:0": "X:0", "x:1": "x:1"}
    assert renaming(None, None, ["a"], ["b"]).inputs == {"a": "a"}  # no manifest: the artifact's own names


def test_a_request_may_use_the_served_name_or_an_alias_but_not_both() -> None:
    names = renaming(_artifact([("output", "PartitionedCall:0")]), SOURCE, ["serving_default_x:0"],
                     ["PartitionedCall:0"])
    ins = wire_tensors([TensorSpec("serving_default_x:0", [1, 2], "float32")], names.inputs)
    outs = wire_tensors([TensorSpec("PartitionedCall:0", [1, 3], "float32")], names.outputs)
    assert set(by_any_name(ins)) == {"input", "serving_default_x:0", "x"}
    for name in ("input", "serving_default_x:0", "x"):
        body = json.dumps({"inputs": [{"name": name, "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}],
                           "outputs": [{"name": "PartitionedCall:0"}]}).encode()
        req = parse_infer(body, None, ins, outs)
        assert list(req.inputs) == ["input"]  # keyed by the served name, whatever the request said
        assert req.outputs[0].name == "PartitionedCall:0" and req.outputs[0].tensor == "output"
    twice = {"inputs": [{"name": n, "shape": [1, 2], "datatype": "FP32", "data": [1, 2]} for n in ("input", "x")]}
    with pytest.raises(RequestError, match="given twice"):
        parse_infer(json.dumps(twice).encode(), None, ins, outs)


# ------------------------------------------------------------------------------------------ a real server
tritonhttp = pytest.importorskip("tritonclient.http")


def classify_digit(client, model: str, digit: np.ndarray, headers: dict[str, str]) -> tuple[str, str, int]:
    """The client code written once: names and shape from the metadata, the digit's class from the answer."""
    meta = client.get_model_metadata(model, headers=dict(headers))
    inp, out = meta["inputs"][0], meta["outputs"][0]
    x = digit.astype(np.float32).reshape([1 if d < 0 else d for d in inp["shape"]])
    tensor = tritonhttp.InferInput(inp["name"], list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    # tritonclient's infer() adds to the headers dict it is given: each call gets its own copy
    result = client.infer(model, [tensor], outputs=[tritonhttp.InferRequestedOutput(out["name"])],
                          headers=dict(headers))
    return inp["name"], out["name"], int(result.as_numpy(out["name"]).argmax())


def test_one_client_gets_the_same_names_from_the_tflite_int8_and_the_onnx(served) -> None:
    from edgekit.data.calibration import mnist_split

    x_test, y_test = mnist_split()[2][:10], mnist_split()[3][:10]
    client = tritonhttp.InferenceServerClient(served.url)
    try:
        seen = {}
        for model in ("mnist_cnn-int8", "mnist_cnn-fp32"):  # the folder's int8 TFLite, the fp32 ONNX
            answers = [classify_digit(client, model, d / 255, {}) for d in x_test]
            seen[model] = {(i, o) for i, o, _ in answers}
            assert sum(a[2] == y for a, y in zip(answers, y_test, strict=True)) >= 9
        manifest = json.loads((served.folder / "manifest.json").read_text())
        assert seen["mnist_cnn-int8"] == seen["mnist_cnn-fp32"] == {(manifest["source"]["input"]["name"],
                                                                    manifest["source"]["outputs"][0])}
        meta = client.get_model_metadata("mnist_cnn-int8")
        assert meta["parameters"]["artifact_names"] == {"inputs": {"input": "serving_default_input:0"},
                                                        "outputs": {"output": "PartitionedCall:0"}}
        # a client written against the TFLite's own names still works, and gets its answer under them
        x = (x_test[0] / 255).astype(np.float32).reshape(1, 28, 28, 1)
        tensor = tritonhttp.InferInput("serving_default_input:0", [1, 28, 28, 1], "FP32")
        tensor.set_data_from_numpy(x)
        native = client.infer("mnist_cnn-int8", [tensor],
                              outputs=[tritonhttp.InferRequestedOutput("PartitionedCall:0")])
        assert int(native.as_numpy("PartitionedCall:0").argmax()) == int(y_test[0])
        # the ONNX artifact itself carries the source's names, so Triton serving it (edgekit export --triton)
        # answers to the same client
        import onnx

        exported = onnx.load(str(served.folder / "mnist_cnn.fp32.onnx"), load_external_data=False)
        assert [i.name for i in exported.graph.input] == ["input"] and [o.name for o in exported.graph.output] == [
            "output"]
    finally:
        client.close()
