"""onnxruntime specifics: provider selection, the silent-CPU-fallback guard, options."""

from __future__ import annotations

from typing import Any

import pytest

from edgekit.core.errors import NotAvailable, UsageError
from edgekit.runtimes import onnxruntime as ortmod
from edgekit.runtimes.onnxruntime import OnnxRuntime

ort = pytest.importorskip("onnxruntime")


def test_cuda_that_falls_back_to_cpu_is_refused(tiny_models: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """onnxruntime-gpu without its CUDA libraries quietly runs on the CPU: that must not be reported as GPU."""
    real = ort.InferenceSession

    def session(path: str, sess_options: Any = None, providers: Any = None, provider_options: Any = None) -> Any:
        assert providers == ["CUDAExecutionProvider", "CPUExecutionProvider"]
        assert provider_options[0] == {"device_id": "0"}
        return real(path, sess_options=sess_options, providers=["CPUExecutionProvider"])

    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(ort, "InferenceSession", session)
    with pytest.raises(NotAvailable, match="did not start") as err:
        OnnxRuntime().load(tiny_models["models"]["onnx"], device="gpu")
    assert "onnxruntime-gpu" in err.value.hint


def test_tensorrt_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("EDGEKIT_CACHE_DIR", str(tmp_path))
    opts = ortmod._provider_options("tensorrt", {"fp16": True, "device_id": 1})
    assert opts[0]["trt_engine_cache_path"] == str(tmp_path / "tensorrt")
    assert opts[0]["trt_fp16_enable"] == "True" and opts[0]["device_id"] == "1"
    assert opts[1] == {"device_id": "1"} and opts[2] == {}


def test_graph_optimization_and_threads(tiny_models: dict[str, Any]) -> None:
    rt = OnnxRuntime()
    rt.load(tiny_models["models"]["onnx"], threads=1, graph_optimization="basic", spinning=False)
    assert rt.info() == {"providers": ["CPUExecutionProvider"], "graph_optimization": "basic", "intra_op_threads": 1,
                         "spinning": False}
    with pytest.raises(UsageError, match="graph optimisation level"):
        OnnxRuntime().load(tiny_models["models"]["onnx"], graph_optimization="fastest")


def test_workers_spin_only_where_the_cores_are_free(tiny_models: dict[str, Any]) -> None:
    """Spinning intra-op workers are the fastest setting on an idle 2-core CPU and the slowest on a busy one
    (docs/results/openvino.md): the default follows the load average; `--option spinning=...` fixes it."""
    from edgekit.runtimes.onnxruntime import spinning_default

    assert spinning_default(2, load=0.1, cores=2) and spinning_default(None, load=0.3, cores=4)
    assert not spinning_default(2, load=1.2, cores=2) and not spinning_default(None, load=9.0, cores=2)
    assert spinning_default(1, load=1.0, cores=2)  # one thread, one free core
    for options, entry in (({"spinning": False}, "0"), ({"spinning": True}, "1")):
        rt = OnnxRuntime()
        rt.load(tiny_models["models"]["onnx"], threads=2, **options)
        assert rt.session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == entry
    with pytest.raises(UsageError, match="takes true or false"):
        OnnxRuntime().load(tiny_models["models"]["onnx"], spinning="sometimes")


def test_unknown_device() -> None:
    ok, why = OnnxRuntime.available("npu")
    assert not ok and "no device 'npu'" in why


def test_rejected_inputs_are_a_usage_error_by_type(tiny_models: dict[str, Any]) -> None:
    """onnxruntime's InvalidArgument (wrong dtype or rank) is the caller's to fix: mapped by type, not by text."""
    import numpy as np

    rt = OnnxRuntime()
    rt.load(tiny_models["models"]["onnx"])
    with pytest.raises(UsageError, match="onnxruntime failed to run the model") as err:
        rt.run({rt.inputs[0].name: np.zeros((1, 1, 28, 28), np.float64)})
    assert isinstance(err.value.__cause__, ort.capi.onnxruntime_pybind11_state.InvalidArgument)
    assert "'float32'" in err.value.hint
