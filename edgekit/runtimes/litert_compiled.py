"""LiteRT's CompiledModel API: the path to a GPU (WebGPU/OpenCL/Metal accelerators) from Python.

The classic Interpreter takes delegates as shared libraries that no pip wheel ships for desktop
GPUs; `ai_edge_litert` 2.x instead bundles GPU accelerators behind `CompiledModel`, with the CPU
(XNNPACK) as fallback for ops the GPU cannot run. This module wraps that API to the Runtime
contract as one of `LiteRT`'s two backends: for `device="gpu"` (and for the CPU with
`api="compiled"`, which is how the path is tested where there is no GPU).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import available
from edgekit.core.border import vendor_errors
from edgekit.core.errors import NotAvailable, RuntimeFailure, UsageError
from edgekit.runtimes.base import input_array
from edgekit.runtimes.litert_io import interpreter_class, tensor_spec

GPU_HINT = ("LiteRT's GPU accelerator needs a GPU driver it can use: on Linux a Vulkan driver (apt install "
            "libvulkan1 plus the GPU vendor's Vulkan ICD, e.g. mesa-vulkan-drivers or the NVIDIA driver); "
            "otherwise profile with --device cpu.")


@contextlib.contextmanager
def native_stderr(sink: list[str]) -> Iterator[None]:
    """Capture what native code writes to file descriptor 2 (LiteRT logs every accelerator it tries).

    The text is appended to SINK, so an error can quote the native reason instead of a bare
    "compiled_model.cc:1036", and `--json` users do not get a page of INFO lines.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (embedded interpreters): capture nothing
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            sink.append(tmp.read().decode("utf-8", "replace"))


def native_error(log: str) -> str:
    """The informative lines of a LiteRT native log (errors and failures), shortened."""
    keep = [ln.strip() for ln in log.splitlines()
            if ("ERROR" in ln or "Failed" in ln or "failed" in ln) and "Source Location" not in ln]
    return " | ".join(dict.fromkeys(keep))[:600] or log.strip()[-400:]


def gpu_status(root: str | Path = "/") -> tuple[bool, str]:
    """Whether LiteRT's GPU accelerator has something to run on here, and if not, why."""
    if not available("ai_edge_litert"):
        return False, "the GPU path needs ai_edge_litert's CompiledModel API: pip install ai-edge-litert"
    try:
        importlib.import_module("ai_edge_litert.compiled_model")
    except ImportError as exc:
        return False, f"this ai_edge_litert has no CompiledModel API ({exc}); pip install -U ai-edge-litert"
    system = platform.system()
    if system == "Darwin":
        return True, ""  # Metal
    root = Path(root)
    if not (list((root / "dev/dri").glob("renderD*")) or (root / "dev/nvidia0").exists()):
        return False, "no GPU device node here (/dev/dri/renderD* or /dev/nvidia0). " + GPU_HINT
    if system == "Linux":
        try:
            ctypes.CDLL("libvulkan.so.1")
        except OSError:
            return False, "a GPU is present but the Vulkan loader (libvulkan.so.1) is not installed. " + GPU_HINT
    return True, ""


class CompiledModelBackend:
    """One .tflite loaded through CompiledModel, with TensorSpecs named as the Interpreter names them.

    `LiteRT` has checked that the GPU is usable (`gpu_status`) before it builds one with GPU=True.
    """

    def __init__(self, path: str | Path, gpu: bool, threads: int | None = None) -> None:
        cm_mod = importlib.import_module("ai_edge_litert.compiled_model")
        accel = cm_mod.HardwareAccelerator.CPU
        if gpu:
            accel = cm_mod.HardwareAccelerator.GPU | cm_mod.HardwareAccelerator.CPU
        opts = cm_mod.Options(hardware_accelerators=accel,
                              cpu_options=cm_mod.CpuOptions(num_threads=int(threads or 0)))
        log: list[str] = []
        # The native log says why (the exception only where); it is complete once native_stderr exits.
        border = vendor_errors("litert", error=NotAvailable if gpu else RuntimeFailure,
                               what="LiteRT's GPU accelerator did not start" if gpu
                               else f"LiteRT (CompiledModel) could not load {path}",
                               hint=GPU_HINT if gpu else None, describe=lambda exc: native_error("".join(log)) or None)
        with border, native_stderr(log):
            self.model = cm_mod.CompiledModel.from_file(str(path), options=opts)
        self.delegates = ["gpu", "cpu-fallback"] if gpu else ["xnnpack"]
        self.fully_accelerated = bool(self.model.is_fully_accelerated())
        sig = self.model.get_signature_by_index(0)
        self._key = sig["key"]
        # Quantization parameters are not in CompiledModel's details: read them, by tensor index,
        # from an Interpreter over the same file (parsing only; no tensors are allocated).
        interp = interpreter_class()(model_path=str(path))
        by_index = {d["index"]: d for d in interp.get_input_details() + interp.get_output_details()}
        ins = self.model.get_input_tensor_details(self._key)
        outs = self.model.get_output_tensor_details(self._key)
        self.inputs = [tensor_spec(by_index[ins[n]["index"]]) for n in sig["inputs"]]
        self.outputs = [tensor_spec(by_index[outs[n]["index"]]) for n in sig["outputs"]]
        self._in_shapes = [list(ins[n]["shape"]) for n in sig["inputs"]]
        self._out_shapes = [list(outs[n]["shape"]) for n in sig["outputs"]]
        self._new_buffers()

    def _new_buffers(self) -> None:
        """Fresh I/O buffers, each written once: LiteRT sets up a buffer's environment on its first
        write (logging every accelerator it tries), which belongs to loading, not to an inference."""
        log: list[str] = []
        with native_stderr(log):
            self._ib = self.model.create_input_buffers(0)
            self._ob = self.model.create_output_buffers(0)
            for buf, spec, shape in zip(self._ib, self.inputs, self._in_shapes, strict=True):
                buf.write(np.zeros(shape, dtype=np.dtype(spec.dtype)))

    def _prepare(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        arrays = []
        for i, spec in enumerate(self.inputs):
            x = np.ascontiguousarray(input_array(inputs, spec, self.inputs))
            if list(x.shape) != self._in_shapes[i]:
                with vendor_errors("litert", error=UsageError,
                                   what=f"LiteRT cannot resize input '{spec.name}' to {list(x.shape)}"):
                    self.model.resize_input_tensor(i, list(x.shape), 0, strict=False)
                self._in_shapes[i] = list(x.shape)
                self._out_shapes = [list(d["shape"]) for d in
                                    self.model.get_output_tensor_details(self._key).values()]
                self._new_buffers()
            arrays.append(x)
        return arrays

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self.bind(inputs)()
        return {s.name: v for s, v in zip(self.outputs, values, strict=True)}

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], list[np.ndarray]]:
        arrays = self._prepare(inputs)
        pairs = list(zip(self._ib, arrays, strict=True))
        outs = [(buf, int(np.prod(shape)), np.dtype(spec.dtype), tuple(shape))
                for buf, spec, shape in zip(self._ob, self.outputs, self._out_shapes, strict=True)]
        run, ib, ob = self.model.run_by_index, self._ib, self._ob

        def call() -> list[np.ndarray]:
            for buf, x in pairs:
                buf.write(x)
            run(0, ib, ob)
            return [buf.read(n, dt).reshape(shape) for buf, n, dt, shape in outs]

        return call

    def info(self) -> dict[str, Any]:
        return {"api": "compiled_model", "fully_accelerated": self.fully_accelerated}

    def close(self) -> None:
        import gc

        with native_stderr([]):  # LiteRT logs each accelerator it destroys
            self._ib = self._ob = []
            self.model = None
            gc.collect()
