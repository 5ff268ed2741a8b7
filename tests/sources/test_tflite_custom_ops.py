"""Issue 37: float .tflite sources with MediaPipe's custom ops, and with several outputs.

- a custom op is refused only where LiteRT (asked in a child process) cannot run the graph, quoting LiteRT;
- MediaPipe's custom ops are rewritten into builtins in edgekit's copy, which the conversion reads, while the
  reference stays the user's file as LiteRT runs it (or is the copy, where LiteRT cannot run the original);
- every output of a .tflite source is validated, matched by name (by shape where a converter renamed them).
The graphs are MediaPipe-shaped ones built in milliseconds (edgekit.testing.mediapipe_graphs); one real int8
conversion (slow) takes a Convolution2DTransposeBias graph through `edgekit convert` to int8 and the Edge TPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")

from edgekit.cli import main  # noqa: E402
from edgekit.core.errors import RuntimeCrash, UnsupportedModel  # noqa: E402
from edgekit.sources import tflite as tflite_source  # noqa: E402
from edgekit.sources.base import LoadOptions  # noqa: E402
from edgekit.testing import mediapipe_graphs as mg  # noqa: E402

LITERT_SAID = "Encountered unresolved custom op: EdgekitNoSuchOp."


@pytest.fixture
def mediapipe_tflite(tmp_path: Path) -> Path:
    """A two-output segmenter whose upsampling is MediaPipe's Convolution2DTransposeBias."""
    builtin = mg.segmenter(tmp_path / "builtin.tflite", second_head=True)
    path = tmp_path / "selfie.tflite"
    path.write_bytes(mg.to_mediapipe_form(builtin.read_bytes()))
    return path


def litert(path: Path, x: np.ndarray) -> dict[str, np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return {o["name"]: it.get_tensor(o["index"]) for o in it.get_output_details()}


def ops(path: Path) -> list[str]:
    from edgekit.tflite.model import read_tflite

    return [op.op for op in read_tflite(path).ops]


def test_a_mediapipe_graph_converts_from_its_rewritten_copy_against_the_original(mediapipe_tflite: Path) -> None:
    src = tflite_source.load(mediapipe_tflite, LoadOptions())
    assert src.origin == mediapipe_tflite and src.path != mediapipe_tflite and src.model == src.path
    assert "Convolution2DTransposeBias" in ops(mediapipe_tflite)
    assert "Convolution2DTransposeBias" not in ops(src.path) and "TRANSPOSE_CONV" in ops(src.path)
    assert src.changes[0].startswith("Convolution2DTransposeBias (op 1, output 'segment') rewritten as builtin "
                                     "TRANSPOSE_CONV + ADD of the bias")
    assert "the reference stays selfie.tflite as LiteRT runs it" in src.changes[1]
    assert src.describe().path == str(mediapipe_tflite)  # the manifest names the user's file, with its digest
    # every output, by name, and the reference is the user's file as LiteRT runs it (XNNPACK runs the custom op)
    x = np.random.default_rng(0).uniform(0, 1, (3, 16, 16, 3)).astype(np.float32)
    got = src.run_outputs({"input": x})
    assert src.output_names == ["presence", "mask"] and list(got) == ["presence", "mask"]
    for name in got:
        want = np.concatenate([litert(mediapipe_tflite, x[i:i + 1])[name] for i in range(3)])
        np.testing.assert_array_equal(got[name], want)
    np.testing.assert_array_equal(src.predict(x), got["presence"])  # the first output, as before


def test_where_litert_cannot_run_the_original_the_rewritten_copy_is_the_reference(
        mediapipe_tflite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tflite_source, "litert_refusal", lambda path: "Node number 1 (Convolution2DTransposeBias) "
                        "failed to prepare.")
    src = tflite_source.load(mediapipe_tflite, LoadOptions())
    assert "LiteRT cannot run selfie.tflite itself (Node number 1 (Convolution2DTransposeBias) failed to prepare.): " \
        "the reference is the rewritten graph" in src.changes[-1]
    x = np.random.default_rng(1).uniform(0, 1, (1, 16, 16, 3)).astype(np.float32)
    want = litert(src.path, x)
    for name, y in src.run_outputs({"input": x}).items():
        np.testing.assert_array_equal(y, want[name])


def test_a_custom_op_litert_cannot_run_is_refused_quoting_litert(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = mg.with_custom_op(tmp_path / "other.tflite")
    assert main(["convert", str(path), "--target", "tflite", "--quantize", "fp32", "--out", str(tmp_path / "o")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "LiteRT cannot run other.tflite, which uses custom op(s) EdgekitNoSuchOp; LiteRT said: " + LITERT_SAID in err
    assert "custom-op resolver" in err  # the hint: what would run it
    assert "Traceback" not in err and "re-run" not in err
    assert not (tmp_path / "o").exists()


def test_litert_crashing_on_the_file_counts_as_cannot_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.core import isolate

    def crashed(*args: object, **kwargs: object) -> None:
        raise RuntimeCrash("LiteRT crashed (SIGABRT) while loading and running other.tflite.")

    monkeypatch.setattr(isolate, "run_isolated", crashed)
    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    path = mg.with_custom_op(tmp_path / "other.tflite")
    assert tflite_source.litert_refusal(path) == "LiteRT crashed (SIGABRT) while loading and running other.tflite."
    with pytest.raises(UnsupportedModel, match=r"LiteRT said: LiteRT crashed \(SIGABRT\)"):
        tflite_source.load(path, LoadOptions())


def test_a_mediapipe_op_without_an_exact_builtin_form_is_refused_by_name(tmp_path: Path) -> None:
    path = mg.unpooling(tmp_path / "overlap.tflite", stride=1, mix=False)
    with pytest.raises(UnsupportedModel, match=r"MaxPoolingWithArgmax2D \(op 0, output 'pooled'\): its pooling "
                       r"windows \(2x2, strides 1x1\)") as info:
        tflite_source.load(path, LoadOptions())
    assert "stride = window" in (info.value.hint or "")


def _renamed(path: Path, out: Path) -> Path:
    """PATH with its outputs in the other order and renamed as a TFLite converter names them."""
    from ai_edge_litert.tools import flatbuffer_utils as fu

    m = fu.read_model(str(path))
    sg = m.subgraphs[0]
    sg.outputs = list(reversed(list(sg.outputs)))
    for i, t in enumerate(sg.outputs):
        sg.tensors[t].name = f"StatefulPartitionedCall:{i}"
    out.write_bytes(bytes(fu.convert_object_to_bytearray(m)))
    return out


def test_every_output_of_a_two_output_tflite_is_validated_by_name(tmp_path: Path) -> None:
    path = mg.segmenter(tmp_path / "two.tflite", second_head=True)
    out = tmp_path / "out"
    assert main(["convert", str(path), "--target", "tflite", "--quantize", "fp32", "--out", str(out), "--json"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"]["outputs"] == ["presence", "mask"]
    art = manifest["artifacts"][0]
    assert art["fidelity"]["passed"]
    assert [(o["name"], o["artifact_name"], o["matched_by"]) for o in art["fidelity"]["outputs"]] == [
        ("presence", "presence", "name"), ("mask", "mask", "name")]


def test_outputs_reordered_and_renamed_are_matched_by_shape_and_say_so(tmp_path: Path) -> None:
    from edgekit.validation.artifact import Reference, validate

    src = tflite_source.load(mg.segmenter(tmp_path / "two.tflite", second_head=True), LoadOptions())
    x = np.random.default_rng(2).uniform(0, 1, (4, 16, 16, 3)).astype(np.float32)
    ref = Reference(x=x, y_ref=src.predict(x), labels=None, layout="NHWC", inputs_name="random",
                    outputs=src.run_outputs({"input": x}))
    fid = validate(_renamed(src.path, tmp_path / "renamed.tflite"), "tflite", "NHWC", "fp32", ref)
    assert fid.passed
    assert [(o.name, o.artifact_name, o.matched_by) for o in fid.outputs] == [
        ("presence", "StatefulPartitionedCall:1", "shape"), ("mask", "StatefulPartitionedCall:0", "shape")]


@pytest.mark.slow
def test_a_mediapipe_graph_converts_to_int8_and_the_edge_tpu(mediapipe_tflite: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tensorflow")
    calib = tmp_path / "images.npy"
    np.save(calib, np.random.default_rng(0).integers(0, 256, (40, 16, 16, 3), dtype=np.uint8))
    out = tmp_path / "out"
    code = main(["convert", str(mediapipe_tflite), "--target", "tflite,edgetpu", "--quantize", "int8", "--calib",
                 str(calib), "--calib-size", "32", "--val-size", "8", "--out", str(out)])
    assert code == 10  # the Edge TPU model pre-flighted but not compiled here; everything else fine
    said = capsys.readouterr()
    log = said.out + said.err
    assert "source: Convolution2DTransposeBias (op 1, output 'segment') rewritten as builtin TRANSPOSE_CONV" in log
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"]["path"] == str(mediapipe_tflite) and len(manifest["source"]["changes"]) == 2
    arts = {a["path"]: a for a in manifest["artifacts"]}
    for name in ("selfie.int8.tflite", "selfie.int8-uint8io.tflite"):
        art = arts[name]
        assert art["status"] == "ok" and art["precision"] == "int8"
        assert [(o["name"], o["matched_by"]) for o in art["fidelity"]["outputs"]] == [("presence", "name"),
                                                                                      ("mask", "name")]
        assert all(o["fidelity"]["cosine"] > 0.99 for o in art["fidelity"]["outputs"])
        assert "CUSTOM" not in ops(out / name) and "TRANSPOSE_CONV" in ops(out / name)
    edgetpu = arts["selfie.int8-uint8io.tflite"]["extra"]["edgetpu"]
    assert edgetpu["ops_on_tpu"] == edgetpu["ops_total"]  # TRANSPOSE_CONV and the bias ADD map too
