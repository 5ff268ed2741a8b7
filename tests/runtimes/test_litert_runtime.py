"""LiteRT specifics: the Edge TPU delegate path, the CompiledModel (GPU) path, XNNPACK and threads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgekit.core.errors import NotAvailable, UsageError
from edgekit.runtimes import litert, litert_compiled
from edgekit.runtimes.litert import LiteRT


@pytest.fixture()
def compiled_copy(tiny_models: dict[str, Any], tmp_path: Path) -> Path:
    """The int8 model with the Edge TPU custom op's name in it: what `is_edgetpu_model` looks for.

    (A real compiled model needs edgetpu_compiler; trailing bytes do not stop the interpreter.)
    """
    if "tflite-int8" not in tiny_models["models"]:
        pytest.skip(str(tiny_models["skipped"]))
    p = tmp_path / "tiny_edgetpu.tflite"
    p.write_bytes(Path(tiny_models["models"]["tflite-int8"]).read_bytes() + litert.EDGETPU_CUSTOM_OP.encode())
    return p


def test_compiled_model_on_cpu_refused_with_how_to(compiled_copy: Path) -> None:
    with pytest.raises(NotAvailable) as err:
        LiteRT().load(compiled_copy, device="cpu")
    assert "libedgetpu" in err.value.message and "--device edgetpu" in err.value.hint


def test_uncompiled_model_on_edgetpu_is_a_usage_error(tiny_models: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="not compiled for the Edge TPU"):
        LiteRT().load(tiny_models["models"]["tflite-int8"], device="edgetpu")


def test_edgetpu_without_runtime_gives_the_apt_line(compiled_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(litert, "edgetpu_library", lambda: "libedgetpu-not-here.so.1")
    monkeypatch.setattr(litert, "available", lambda m: m != "pycoral")
    ok, why = LiteRT.available("edgetpu")
    assert not ok and "libedgetpu-not-here.so.1" in why and "apt-get install libedgetpu1-std" in why
    with pytest.raises(NotAvailable) as err:
        LiteRT().load(compiled_copy, device="edgetpu")
    assert "apt-get install libedgetpu1-std" in err.value.hint


class _RecordingInterpreter:
    """Wraps the real Interpreter; records the kwargs (the delegate cannot run without a Coral)."""

    seen: dict[str, Any] = {}

    def __init__(self, **kwargs: Any) -> None:
        type(self).seen = dict(kwargs)
        kwargs.pop("experimental_delegates", None)
        from ai_edge_litert.interpreter import Interpreter

        self._real = Interpreter(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_edgetpu_delegate_is_loaded_and_passed(compiled_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ai_edge_litert")
    calls: list[tuple[str, Any]] = []
    sentinel = object()

    def fake_load_delegate(library: str, options: Any = None) -> object:
        calls.append((library, options))
        return sentinel

    import ai_edge_litert.interpreter as ai

    monkeypatch.setattr(litert, "edgetpu_runtime_status", lambda: (True, "libedgetpu.so.1"))
    monkeypatch.setattr(ai, "load_delegate", fake_load_delegate)
    monkeypatch.setattr(litert, "interpreter_class", lambda: _RecordingInterpreter)
    rt = LiteRT()
    rt.load(compiled_copy, device="edgetpu", edgetpu_device="usb:0")
    assert calls == [("libedgetpu.so.1", {"device": "usb:0"})]
    assert _RecordingInterpreter.seen["experimental_delegates"] == [sentinel]
    assert rt.info()["delegates"] == ["edgetpu"] and rt.device == "edgetpu"
    out = rt.run_float({rt.inputs[0].name: np.zeros((1, 28, 28, 1), np.float32)})
    assert next(iter(out.values())).shape == (1, 10)

    def refusing(library: str, options: Any = None) -> object:
        raise ValueError("Failed to load delegate from libedgetpu.so.1")

    monkeypatch.setattr(ai, "load_delegate", refusing)
    with pytest.raises(NotAvailable, match="did not open a device") as err:
        LiteRT().load(compiled_copy, device="edgetpu")
    assert "lsusb" in err.value.hint


def test_edgetpu_devices_from_sysfs(tmp_path: Path) -> None:
    def usb(name: str, vendor: str, product: str) -> None:
        d = tmp_path / "sys/bus/usb/devices" / name
        d.mkdir(parents=True)
        (d / "idVendor").write_text(vendor + "\n")
        (d / "idProduct").write_text(product + "\n")

    usb("1-1", "1d6b", "0002")  # a root hub
    usb("2-1", "18d1", "9302")  # Coral USB Accelerator, firmware loaded
    usb("2-2", "1a6e", "089a")  # Coral USB Accelerator, before firmware
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/apex_0").write_text("")
    assert litert.edgetpu_devices(tmp_path) == ["usb:2-1", "usb:2-2", "pci:0"]
    assert litert.edgetpu_devices(tmp_path / "empty") == []


def test_compiled_model_api_matches_interpreter(tiny_models: dict[str, Any]) -> None:
    pytest.importorskip("ai_edge_litert.compiled_model")
    for key in ("tflite-fp32", "tflite-int8"):
        path = tiny_models["models"][key]
        a, b = LiteRT(), LiteRT()
        a.load(path)
        b.load(path, api="compiled", threads=1)
        assert [s.name for s in a.inputs] == [s.name for s in b.inputs]
        assert a.inputs[0].quantization == b.inputs[0].quantization
        x = np.random.default_rng(3).random((1, 28, 28, 1), dtype=np.float32)
        ya = a.run_float({a.inputs[0].name: x})
        yb = b.run_float({b.inputs[0].name: x})
        np.testing.assert_allclose(next(iter(ya.values())), next(iter(yb.values())), rtol=1e-5, atol=1e-5)
        assert b.info()["api"] == "compiled_model" and b.info()["fully_accelerated"] is True
        x4 = np.repeat(x, 4, axis=0)
        y4 = next(iter(b.run_float({b.inputs[0].name: x4}).values()))
        assert y4.shape == (4, 10)
        np.testing.assert_allclose(y4[3], next(iter(yb.values()))[0], rtol=1e-5, atol=1e-5)
        a.close()
        b.close()


def test_gpu_status_without_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ai_edge_litert.compiled_model")
    monkeypatch.setattr(litert_compiled.platform, "system", lambda: "Linux")
    ok, why = litert_compiled.gpu_status(tmp_path)
    assert not ok and "/dev/dri/renderD*" in why
    (tmp_path / "dev/dri").mkdir(parents=True)
    (tmp_path / "dev/dri/renderD128").write_text("")

    def no_vulkan(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(litert_compiled.ctypes, "CDLL", no_vulkan)
    ok, why = litert_compiled.gpu_status(tmp_path)
    assert not ok and "libvulkan.so.1" in why


def test_native_log_is_captured_and_quoted() -> None:
    import os

    sink: list[str] = []
    with litert_compiled.native_stderr(sink):
        os.write(2, b"INFO: [gpu_registry.cc:130] trying\nERROR: [delegate_webgpu.cc:359] No adapters found\n")
    assert "No adapters found" in sink[0]
    assert litert_compiled.native_error(sink[0]) == "ERROR: [delegate_webgpu.cc:359] No adapters found"


def test_xnnpack_off_and_threads(tiny_models: dict[str, Any]) -> None:
    rt = LiteRT()
    rt.load(tiny_models["models"]["tflite-fp32"], threads=1, xnnpack=False)
    assert rt.info()["delegates"] == [] and rt.info()["threads"] == 1
    x = np.zeros((1, 28, 28, 1), np.float32)
    ref = LiteRT()
    ref.load(tiny_models["models"]["tflite-fp32"])
    np.testing.assert_allclose(next(iter(rt.run({rt.inputs[0].name: x}).values())),
                               next(iter(ref.run({ref.inputs[0].name: x}).values())), rtol=1e-5, atol=1e-6)
    with pytest.raises(UsageError, match="must be float32"):
        rt.run({rt.inputs[0].name: x.astype(np.float64)})
