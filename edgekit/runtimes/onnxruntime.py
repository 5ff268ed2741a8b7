"""ONNX Runtime backend: CPU execution provider, CUDA and TensorRT providers where present.

Device names: "cpu"; "gpu" (alias "cuda") = CUDA provider; "tensorrt" = TensorRT provider with
CUDA and CPU behind it. onnxruntime silently falls back to the CPU when a GPU provider fails to
start (missing CUDA/cuDNN libraries); this backend checks which provider really came up and
refuses the silent fallback, so a "GPU" figure is never a CPU figure.
Threads: `threads` intra-op threads, one inter-op thread. Whether the intra-op workers spin between ops is
decided by how busy the machine is (`spinning_default`): spinning is the fastest setting where the cores are
free and the slowest where they are shared (bench/openvino_speed.py, docs/results/openvino.md); load option
`spinning=true|false` fixes it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import require, version_of
from edgekit.core.artifact import TensorSpec
from edgekit.core.errors import EdgekitError, MissingDependency, NotAvailable, UsageError
from edgekit.runtimes.base import Runtime

# onnx tensor type strings -> numpy dtype names
_ORT_TYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(bool)": "bool",
}
_PROVIDERS = {
    "cpu": ["CPUExecutionProvider"],
    "gpu": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "cuda": ["CUDAExecutionProvider", "CPUExecutionProvider"],
    "tensorrt": ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"],
}
_LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
           "all": "ORT_ENABLE_ALL"}
_ORT_ERRORS = "onnxruntime.capi.onnxruntime_pybind11_state"  # the module of onnxruntime's exception types
GPU_HINT = ("On a machine with an NVIDIA GPU: pip uninstall onnxruntime && pip install onnxruntime-gpu "
            "(the build matching your CUDA major version); TensorRT also needs the TensorRT libraries.")


def _spec(node: Any) -> TensorSpec:
    shape = [d if isinstance(d, int) else -1 for d in node.shape]
    return TensorSpec(name=node.name, shape=shape, dtype=_ORT_TYPES.get(node.type, node.type))


def _provider_options(device: str, options: dict[str, Any]) -> list[dict[str, Any]]:
    """Per-provider options, in the order of _PROVIDERS[device]."""
    device_id = str(int(options.get("device_id", 0)))
    out: list[dict[str, Any]] = []
    for prov in _PROVIDERS[device]:
        if prov == "CUDAExecutionProvider":
            out.append({"device_id": device_id})
        elif prov == "TensorrtExecutionProvider":
            from edgekit.core.fsutil import cache_dir

            cache = cache_dir() / "tensorrt"
            out.append({
                "device_id": device_id,
                # Building an engine takes seconds to minutes: cache it, keyed by TensorRT on the model.
                "trt_engine_cache_enable": "True",
                "trt_engine_cache_path": str(cache),
                "trt_fp16_enable": "True" if options.get("fp16") else "False",
            })
        else:
            out.append({})
    return out


def spinning_default(threads: int | None, load: float | None = None, cores: int | None = None) -> bool:
    """Whether onnxruntime's intra-op workers should spin between ops: where every thread has a core the rest of the
    machine leaves free (the 1-minute load average LOAD plus THREADS within CORES, half a core of slack).

    Spinning workers hold their core between ops. Measured on a 2-core x86 VM, MobileNetV2 at 2 threads: idle
    (load 0.1), int8 4.29 ms spinning against 5.81 not (fp32 3.65 / 5.09); busy (load 9-11), int8 25.4 ms
    spinning against 13.9 not and 13.5 on 1 thread: the thread that computes waits for the ones that spin. With
    one thread it changes nothing."""
    import os

    cores = cores or os.cpu_count() or 1
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # no load average (Windows): onnxruntime's own default
            return True
    return load + (threads or cores) <= cores + 0.5


def _flag(value: Any, name: str) -> bool:
    """A boolean load option (`--option spinning=true` arrives as True), else UsageError."""
    if isinstance(value, bool) or value in (0, 1):
        return bool(value)
    raise UsageError(f"The onnxruntime option '{name}' takes true or false, got '{value}'.")


class OnnxRuntime(Runtime):
    name: ClassVar[str] = "onnxruntime"
    vendor: ClassVar[str] = "onnxruntime"
    formats: ClassVar[tuple[str, ...]] = ("onnx",)
    devices: ClassVar[tuple[str, ...]] = tuple(_PROVIDERS)
    auto_devices: ClassVar[tuple[str, ...]] = ("gpu",)
    load_hint: ClassVar[str | None] = "Check that the file is a complete ONNX model (re-run `edgekit convert`)."
    # onnxruntime's own type for inputs of the wrong name, dtype or rank: the caller's inputs, not a failed run
    run_errors: ClassVar[Mapping[type[BaseException] | str, type[EdgekitError]]] = {
        f"{_ORT_ERRORS}:InvalidArgument": UsageError}

    @classmethod
    def version(cls) -> str | None:
        return version_of("onnxruntime") or version_of("onnxruntime-gpu")

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
        try:
            ort = require("onnxruntime", purpose="run ONNX models")
        except MissingDependency as exc:
            return False, str(exc)
        wanted = _PROVIDERS[device]
        have = ort.get_available_providers()
        if wanted[0] not in have:
            return False, f"onnxruntime here has no {wanted[0]} (available: {', '.join(have)}). {GPU_HINT}"
        return True, ""

    @classmethod
    def device_hint(cls, device: str) -> str | None:
        return None if device == "cpu" else GPU_HINT

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        ort = require("onnxruntime", purpose="run ONNX models")
        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = int(threads)
            so.inter_op_num_threads = 1
        spin = options.get("spinning")
        self.spinning = spinning_default(threads) if spin is None else _flag(spin, "spinning")
        so.add_session_config_entry("session.intra_op.allow_spinning", "1" if self.spinning else "0")
        level = str(options.get("graph_optimization", "all"))
        if level not in _LEVELS:
            raise UsageError(f"Unknown graph optimisation level '{level}'.",
                             hint=f"Choose one of: {', '.join(_LEVELS)}.")
        so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVELS[level])
        so.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), sess_options=so, providers=_PROVIDERS[device],
                                            provider_options=_provider_options(device, options))
        self.providers = self.session.get_providers()
        if self.providers[0] != _PROVIDERS[device][0]:
            # onnxruntime fell back to a provider further down the list: do not report it as the GPU.
            raise NotAvailable(
                f"onnxruntime's {_PROVIDERS[device][0]} did not start (the session came up on "
                f"{self.providers[0]}); its CUDA/cuDNN/TensorRT libraries are missing or do not match.",
                hint=GPU_HINT,
            )
        self.graph_optimization = level
        self.inputs = [_spec(i) for i in self.session.get_inputs()]
        self.outputs = [_spec(o) for o in self.session.get_outputs()]
        self._output_names = [o.name for o in self.outputs]

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self.session.run(self._output_names, inputs)
        return dict(zip(self._output_names, values, strict=True))

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """`session.run(names, feed)` itself: exactly what a caller of onnxruntime does per inference."""
        feed = {s.name: np.ascontiguousarray(inputs[s.name]) for s in self.inputs}
        return functools.partial(self.session.run, self._output_names, feed)

    def info(self) -> dict[str, Any]:
        return {"providers": list(self.providers), "graph_optimization": self.graph_optimization,
                "intra_op_threads": self.threads, "spinning": self.spinning}

    def close(self) -> None:
        self.session = None
