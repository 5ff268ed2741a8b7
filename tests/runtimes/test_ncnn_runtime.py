"""The ncnn runtime on a model written by hand (tests/ncnn/tiny_ncnn.py), held to a numpy forward pass: its I/O by
the source's names, batches, the fp16 options by the weights' stored precision, bad input, a missing .bin, a layer
ncnn does not have, and the GPU refused by name where ncnn sees none (or only a CPU renderer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.core.errors import NotAvailable, RuntimeFailure, UsageError
from tests.ncnn.tiny_ncnn import PARAM, forward, write_model

pytest.importorskip("ncnn")

from edgekit.runtimes.ncnn import Ncnn, fp16_options  # noqa: E402 - after the skip: the runtime needs ncnn


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return np.random.default_rng(1).random((3, 1, 28, 28), dtype=np.float32)


def test_runs_the_model_by_the_source_names(tmp_path: Path, x: np.ndarray) -> None:
    with Ncnn() as rt:
        rt.load(write_model(tmp_path), threads=1)
        assert [(s.name, s.shape, s.dtype) for s in rt.inputs] == [("image", [1, 1, 28, 28], "float32")]
        assert [(s.name, s.shape) for s in rt.outputs] == [("logits", [1, 10])]
        y = rt.run({"image": x})["logits"]
        np.testing.assert_allclose(y, forward(x), atol=1e-4)
        info = rt.info()
        assert info["weights_stored"] == "fp32" and info["use_fp16_storage"] is False and info["num_threads"] == 1
        bound = rt.bind({"image": x[:1]})()
        np.testing.assert_allclose(bound[0][0], y[0], atol=1e-6)
        with pytest.raises(UsageError, match="must have shape"):
            rt.run({"image": x[:, :, :20]})
        with pytest.raises(UsageError, match="Missing input 'image'"):
            rt.run({"pixels": x})


def test_fp16_weights_run_with_fp16_storage_and_fp32_arithmetic(tmp_path: Path, x: np.ndarray) -> None:
    """What the artifact is validated with, on every CPU: fp16 arithmetic (a Pi 5's) only when asked (fp16=on)."""
    with Ncnn() as rt:
        rt.load(write_model(tmp_path, fp16=True), threads=1)
        assert rt.info()["weights_stored"] == "fp16" and rt.info()["use_fp16_storage"] is True
        assert rt.info()["use_fp16_arithmetic"] is False and rt.info()["fp16_mode"] == "auto"
        np.testing.assert_allclose(rt.run({"image": x})["logits"], forward(x), atol=0.05)
    assert fp16_options("storage", "fp32") == {"use_fp16_storage": True, "use_fp16_packed": True,
                                               "use_fp16_arithmetic": False, "use_bf16_storage": False}
    assert fp16_options("auto", "fp16") == fp16_options("storage", "fp16")
    assert fp16_options("on", "fp16")["use_fp16_arithmetic"] is True
    with pytest.raises(UsageError, match="Unknown ncnn fp16 mode"):
        fp16_options("half", "fp32")


def test_files_it_cannot_load_are_named(tmp_path: Path) -> None:
    path = write_model(tmp_path / "a")
    path.with_suffix(".bin").unlink()
    with pytest.raises(UsageError, match="m.ncnn.bin is not beside it"):
        Ncnn().load(path)
    odd = write_model(tmp_path / "b", param=PARAM.replace("ReLU                     relu_0", "Pad  Pad_3"))
    with pytest.raises(RuntimeFailure, match="layers ncnn .* does not have: Pad"):
        Ncnn().load(odd)


def test_gpu_is_refused_by_name_where_there_is_none(tmp_path: Path) -> None:
    ok, why = Ncnn.available("gpu")
    if ok:
        pytest.skip("ncnn sees a Vulkan GPU here: the conformance suite runs it")
    assert "sees no Vulkan GPU" in why
    with pytest.raises(NotAvailable) as err:
        Ncnn().load(write_model(tmp_path), device="gpu")
    assert err.value.hint and "Vulkan" in err.value.hint
