"""Issue 37: MediaPipe's custom ops rewritten into builtins (edgekit.tflite.custom_ops), checked against the builtin
form and against the arithmetic of MediaPipe's own kernels, on graphs built in milliseconds (edgekit.testing).
"""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")

from edgekit.core.errors import UnsupportedModel  # noqa: E402
from edgekit.testing import mediapipe_graphs as mg  # noqa: E402
from edgekit.tflite.custom_ops import custom_op_names, rewrite_custom_ops  # noqa: E402


def run(blob: bytes, x: np.ndarray, builtin: bool = False) -> dict[str, np.ndarray]:
    """Every output by name, with XNNPACK (LiteRT's default) or LiteRT's builtin kernels only."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    kw = {"experimental_op_resolver_type": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES} if builtin else {}
    it = Interpreter(model_content=blob, **kw)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return {o["name"]: it.get_tensor(o["index"]) for o in it.get_output_details()}


def ops_of(blob: bytes, folder: Path) -> list[str]:
    from edgekit.tflite.model import read_tflite

    p = folder / "ops.tflite"
    p.write_bytes(blob)
    return [op.op for op in read_tflite(p).ops]


@pytest.mark.parametrize("kernel", [2, 3, 4])
def test_transpose_conv_bias_becomes_transpose_conv_and_add_exactly(tmp_path: Path, kernel: int) -> None:
    builtin = mg.segmenter(tmp_path / "seg.tflite", kernel=kernel, second_head=True).read_bytes()
    mediapipe = mg.to_mediapipe_form(builtin)
    assert custom_op_names(mediapipe) == ["Convolution2DTransposeBias"]
    x = np.random.default_rng(1).uniform(0, 1, (1, 16, 16, 3)).astype(np.float32)
    with pytest.raises(RuntimeError, match="unresolved custom op: Convolution2DTransposeBias"):
        run(mediapipe, x, builtin=True)  # LiteRT's builtin kernels do not know it; XNNPACK does
    done = rewrite_custom_ops(mediapipe)
    assert done.refused == [] and done.others == [] and len(done.changes) == 1
    assert "Convolution2DTransposeBias (op 1, output 'segment') rewritten as builtin TRANSPOSE_CONV + ADD" in \
        done.changes[0]
    ops = ops_of(done.blob, tmp_path)
    assert "CUSTOM" not in ops and "Convolution2DTransposeBias" not in ops
    assert ops[ops.index("TRANSPOSE_CONV") + 1] == "ADD"
    # the same arithmetic as the converter's biased TRANSPOSE_CONV: bit for bit on LiteRT's builtin kernels
    want, got = run(builtin, x, builtin=True), run(done.blob, x, builtin=True)
    assert list(got) == list(want)  # the outputs keep their names and order
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    # and against the MediaPipe file as XNNPACK runs it (what a .tflite source's reference is): rounding only
    original, rewritten = run(mediapipe, x), run(done.blob, x)
    for name in original:
        np.testing.assert_allclose(rewritten[name], original[name], rtol=0, atol=1e-6)


def test_the_options_are_mediapipes_raw_struct() -> None:
    # TfLiteTransposeConvParams: padding (kTfLitePaddingSame = 1, kTfLitePaddingValid = 2), stride_w, stride_h
    assert mg.transpose_conv_params("SAME", 2, 3) == struct.pack("<3i", 1, 2, 3)
    # selfie_segmentation.tflite (mediapipe 0.10.21) carries exactly these 12 bytes
    assert mg.transpose_conv_params("SAME", 2, 2) == bytes([1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0])


def mediapipe_unpooling(x: np.ndarray, window: int) -> np.ndarray:
    """MaxPoolingWithArgmax2D then MaxUnpooling2D as MediaPipe's C++ kernels compute them (first strict maximum,
    row-major in the window; zeros elsewhere)."""
    n, h, w, c = x.shape
    out = np.zeros_like(x)
    for b in range(n):
        for i in range(h // window):
            for j in range(w // window):
                for ch in range(c):
                    best, at = np.finfo(np.float32).min, (0, 0)
                    for dy in range(window):
                        for dx in range(window):
                            v = x[b, i * window + dy, j * window + dx, ch]
                            if v > best:
                                best, at = v, (dy, dx)
                    out[b, i * window + at[0], j * window + at[1], ch] = best
    return out


def test_argmax_pooling_and_unpooling_become_builtins_that_match_mediapipes_kernels(tmp_path: Path) -> None:
    blob = mg.unpooling(tmp_path / "unpool.tflite", mix=False).read_bytes()
    done = rewrite_custom_ops(blob)
    assert [c.split(" (")[0] for c in done.changes] == ["MaxPoolingWithArgmax2D", "MaxUnpooling2D"]
    assert not {"CUSTOM", "MaxPoolingWithArgmax2D", "MaxUnpooling2D"} & set(ops_of(done.blob, tmp_path))
    rng = np.random.default_rng(2)
    ties = rng.integers(0, 2, (1, 8, 8, 4)).astype(np.float32)  # many equal maxima in a window: the first one wins
    for x in (rng.normal(0, 1, (1, 8, 8, 4)).astype(np.float32), ties):
        want = mediapipe_unpooling(x, 2)
        for builtin in (False, True):
            np.testing.assert_array_equal(run(done.blob, x, builtin)["unpooled"], want)


def test_an_unread_argmax_is_dropped_and_overlapping_windows_are_refused_by_name(tmp_path: Path) -> None:
    # stride 1 under a 2x2 window: the windows overlap, and no builtin computes MediaPipe's argmax scatter exactly
    blob = mg.unpooling(tmp_path / "overlap.tflite", stride=1, mix=False).read_bytes()
    done = rewrite_custom_ops(blob)
    assert done.changes == [] and done.blob == blob  # nothing half rewritten
    assert len(done.refused) == 2
    assert done.refused[0].startswith("MaxPoolingWithArgmax2D (op 0, output 'pooled'): its pooling windows (2x2, "
                                      "strides 1x1)")
    assert done.refused[1].startswith("MaxUnpooling2D (op 1, output 'unpooled')")


def test_other_custom_ops_are_left_as_they_are(tmp_path: Path) -> None:
    blob = mg.with_custom_op(tmp_path / "other.tflite", "SomeoneElsesOp").read_bytes()
    done = rewrite_custom_ops(blob)
    assert done.others == ["SomeoneElsesOp"] and done.changes == [] and done.blob == blob


def _damaged(tmp_path: Path, edit) -> bytes:
    from ai_edge_litert.tools import flatbuffer_utils as fu

    blob = mg.to_mediapipe_form(mg.segmenter(tmp_path / "seg.tflite").read_bytes())
    m = fu.convert_bytearray_to_object(bytearray(blob))
    edit(m.subgraphs[0].operators[1], m.subgraphs[0])
    return bytes(fu.convert_object_to_bytearray(m))


@pytest.mark.parametrize("damage, words", [
    (lambda op, sg: setattr(op, "customOptions", [1, 0, 0, 0]), "fewer than the 12"),
    (lambda op, sg: setattr(op, "customOptions", list(struct.pack("<3i", 7, 2, 2))), "padding code is 7"),
    (lambda op, sg: setattr(op, "customOptions", list(struct.pack("<3i", 1, 0, 2))), "stride_width is 0"),
    (lambda op, sg: setattr(op, "inputs", [op.inputs[0], 10_000, op.inputs[2]]), "tensor 10000"),
    (lambda op, sg: setattr(op, "inputs", list(op.inputs[:2])), "2 inputs"),
    (lambda op, sg: setattr(sg.tensors[op.outputs[0]], "shape", [1, 17, 16, 1]), "MediaPipe's kernel makes"),
])
def test_a_damaged_op_is_refused_with_the_reason_never_a_crash(tmp_path: Path, damage, words: str) -> None:
    done = rewrite_custom_ops(_damaged(tmp_path, damage))
    assert done.changes == [] and len(done.refused) == 1 and words in done.refused[0], done.refused


def test_a_truncated_file_is_unsupported_not_a_traceback(tmp_path: Path) -> None:
    blob = mg.to_mediapipe_form(mg.segmenter(tmp_path / "seg.tflite").read_bytes())
    with pytest.raises(UnsupportedModel, match="truncated or corrupt"):
        rewrite_custom_ops(blob[: len(blob) // 3])


def test_mutated_files_give_a_rewrite_a_refusal_or_unsupported_never_another_error(tmp_path: Path) -> None:
    seeds = [mg.to_mediapipe_form(mg.segmenter(tmp_path / "seg.tflite").read_bytes()),
             mg.unpooling(tmp_path / "unpool.tflite").read_bytes()]
    rng = np.random.default_rng(0)
    for i in range(300):  # bytes flipped at random: names that are not UTF-8, opcodes and tensors out of range ...
        blob = bytearray(seeds[i % 2])
        for _ in range(rng.integers(1, 8)):
            blob[rng.integers(0, len(blob))] = rng.integers(0, 256)
        with contextlib.suppress(UnsupportedModel):  # anything else (IndexError, UnicodeDecodeError) fails the test
            rewrite_custom_ops(bytes(blob))
