"""One black-box contract for every runtime (the formats' own and RUNTIMES: edgekit.runtimes.runtime_names), on
every format it loads (as ExecuTorch's suite).

The same tiny CNN, with the same weights, exists in every format (edgekit.testing.tiny_cnn);
a numpy forward pass is the ground truth. Each runtime must: load it and describe its tensors, give
the reference outputs within tolerance through run_float (quantizing int8 inputs and dequantizing
outputs), give the same values through bind() as through run(), take a batch where the batch is
dynamic, and turn bad input into edgekit errors. What is not installed or not present is skipped
with the reason the runtime itself gives; on a machine with a CUDA GPU the "gpu" cases run too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgekit.core.errors import EdgekitError, NotAvailable, UsageError
from edgekit.runtimes import RUNTIMES, get_runtime, runtime_names
from edgekit.testing import tiny_cnn
from edgekit.testing.runtime_contract import check_contract as contract

CASES = [(rt, key, dev) for rt in runtime_names() for key, (fmt, _, _) in tiny_cnn.kinds().items()
         if fmt in get_runtime(rt).formats for dev in ("cpu", "gpu")]


def _load(rt_name: str, key: str, device: str, tiny: dict[str, Any]) -> Any:
    if key not in tiny["models"]:
        pytest.skip(f"{key} was not built here: {tiny['skipped']}")
    cls = get_runtime(rt_name)
    if device not in cls.devices:
        pytest.skip(f"{rt_name} has no {device} device")
    ok, why = cls.available(device)
    if not ok:
        pytest.skip(f"{rt_name} on {device}: {why}")
    rt = cls()
    options = {"input_shape": [1, 1, 28, 28]} if key == "torchscript" else {}
    rt.load(tiny["models"][key], device=device, **options)
    return rt


def _feed(key: str, x_nchw: np.ndarray) -> np.ndarray:
    layout = tiny_cnn.kinds()[key][2]
    return x_nchw if layout == "NCHW" else np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1))


@pytest.fixture(scope="module")
def samples() -> tuple[np.ndarray, np.ndarray]:
    x = tiny_cnn.sample_inputs(8)
    return x, tiny_cnn.forward(x)


@pytest.mark.parametrize(("rt_name", "key", "device"), CASES, ids=[f"{r}-{k}-{d}" for r, k, d in CASES])
def test_runtime_contract(rt_name: str, key: str, device: str, tiny_models: dict[str, Any],
                          samples: tuple[np.ndarray, np.ndarray]) -> None:
    check_contract(_load(rt_name, key, device, tiny_models), key, device, samples)


def check_contract(rt: Any, key: str, device: str, samples: tuple[np.ndarray, np.ndarray]) -> None:
    """The contract (edgekit.testing.runtime_contract) on the tiny CNN in format KEY, loaded on DEVICE."""
    precision = tiny_cnn.kinds()[key][1]
    x, ref = samples
    contract(rt, precision, "int8" if precision == "int8" else "float32", device, x, ref)
    rt.close()


ABSENT = [(rt, dev) for rt in runtime_names() for dev in get_runtime(rt).devices if dev != "cpu"]


@pytest.mark.parametrize(("rt_name", "device"), ABSENT, ids=[f"{r}-{d}" for r, d in ABSENT])
def test_absent_device_says_why(rt_name: str, device: str, tiny_models: dict[str, Any]) -> None:
    """Every accelerator a runtime names either works here or is refused with a reason and an install hint."""
    cls = get_runtime(rt_name)
    ok, why = cls.available(device)
    if ok:
        pytest.skip(f"{rt_name} on {device} is available here: covered by the contract test")
    assert why and len(why) > 20, why
    fmt_key = next((k for k, (fmt, _, _) in tiny_cnn.kinds().items() if fmt == cls.formats[0]), "")  # its tiny model
    if fmt_key not in tiny_models["models"]:
        pytest.skip(f"no {fmt_key} model here")
    with pytest.raises((NotAvailable, UsageError)) as err:
        cls().load(tiny_models["models"][fmt_key], device=device)
    assert err.value.hint or err.value.exit_code == 2
    if isinstance(err.value, NotAvailable):
        assert err.value.exit_code == 3


CORRUPT = {"onnx": ("bad.onnx", b"\x08\x07garbage" * 10),
           "tflite": ("bad.tflite", b"\x1c\x00\x00\x00TFL3" + b"\x00" * 40),
           "torch": ("bad.pt2", b"PK\x03\x04garbage"), "savedmodel": ("bad_savedmodel", b"\x00not a proto"),
           "openvino": ("bad.xml", b'<?xml version="1.0"?>\n<net name="x" version="11"><layers><layer id="0" '),
           "ncnn": ("bad.ncnn.param", b"7767517\n2 2\nInput in0 0 1 in0\nConvolution c 1 1 in0 \xff\xfe 0=8")}


def _truncated(src: Path, folder: Path) -> Path:
    """A copy of the tiny model SRC cut to half its bytes (a SavedModel: its saved_model.pb), its companion files
    whole: the corrupt file of a format without a hand-made one in CORRUPT."""
    import shutil

    from edgekit.core.formats import companions

    folder.mkdir()
    if src.is_dir():
        dst = Path(shutil.copytree(src, folder / src.name))
        pb = dst / "saved_model.pb"
        pb.write_bytes(pb.read_bytes()[: pb.stat().st_size // 2])
        return dst
    for extra in companions(src):
        shutil.copyfile(extra, folder / extra.name)
    dst = folder / src.name
    dst.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    return dst


@pytest.mark.parametrize("rt_name", runtime_names())
def test_corrupt_file_is_an_edgekit_error(rt_name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    cls = get_runtime(rt_name)
    ok, why = cls.available("cpu")
    if not ok:
        pytest.skip(why)
    fmt = cls.formats[0]
    if fmt in CORRUPT:
        name, data = CORRUPT[fmt]
        path = tmp_path / name
        if name.endswith("_savedmodel"):
            path.mkdir()
            (path / "saved_model.pb").write_bytes(data)
        else:
            path.write_bytes(data)
    else:  # a format added since: its tiny model, cut short (the session's tiny models built only then: seconds)
        tiny_models = request.getfixturevalue("tiny_models")
        key = next((k for k, (f, _, _) in tiny_cnn.kinds().items() if f == fmt and k in tiny_models["models"]), None)
        if key is None:
            pytest.fail(f"the {rt_name} runtime loads {fmt}, which has no corrupt case here nor a tiny model "
                        "(edgekit.testing.tiny_cnn) to cut short")
        path = _truncated(Path(tiny_models["models"][key]), tmp_path / "cut")
    with pytest.raises(EdgekitError):
        cls().load(path, device="cpu")


def test_registry_and_classes_agree() -> None:
    from edgekit.runtimes import default_runtimes

    for name in runtime_names():
        cls = get_runtime(name)
        assert cls.name == name
        assert "cpu" in cls.devices and set(cls.auto_devices) <= set(cls.devices)
    for fmt, name in default_runtimes().items():
        assert fmt in get_runtime(name).formats


def test_a_runtime_from_one_file_keeps_the_contract(monkeypatch: pytest.MonkeyPatch, tiny_models: dict[str, Any],
                                                    samples: tuple[np.ndarray, np.ndarray], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """README "Extending edgekit": a runtime is one file (onnx_reference_runtime.py) and one RUNTIMES line."""
    import json

    from edgekit.cli import main

    monkeypatch.setitem(RUNTIMES, "onnx-reference", "onnx_reference_runtime:OnnxReference")  # the one line
    check_contract(_load("onnx-reference", "onnx", "cpu", tiny_models), "onnx", "cpu", samples)
    assert "onnx-reference" in [n for n in runtime_names() if "onnx" in get_runtime(n).formats]
    rc = main(["profile", str(tiny_models["models"]["onnx"]), "--runtime", "onnx-reference", "--json", "--runs", "3",
               "--min-seconds", "0", "--warmup", "1"])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0 and result["runtime"]["name"] == "onnx-reference" and result["latency_ms"]["p50"] > 0
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(CORRUPT["onnx"][1])
    with pytest.raises(EdgekitError):  # its vendor's exceptions are mapped at the Runtime border
        get_runtime("onnx-reference")().load(bad)
