"""LiteRT (TFLite) backend: `ai_edge_litert`, falling back to `tf.lite` where it is absent.

Devices:
- "cpu": the Interpreter with XNNPACK (LiteRT's default delegate; `xnnpack=False` turns it off)
  and `threads`;
- "edgetpu": a model compiled by `edgetpu_compiler`, through the Edge TPU delegate
  (`libedgetpu.so.1` loaded with `load_delegate`, or Coral's `pycoral` where it is importable);
- "gpu": LiteRT's CompiledModel API with its GPU accelerator (WebGPU/OpenCL/Metal, whichever the
  platform has), falling back to the CPU for ops the GPU cannot run (see litert_compiled.py).
tflite-runtime is deliberately not used: its last release (2.14) breaks with numpy 2 and cannot
run models written by current converters.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit._deps import available, version_of
from edgekit.artifact import TensorSpec
from edgekit.errors import MissingDependency, NotAvailable, RuntimeFailure, UsageError
from edgekit.runtimes.base import Runtime

EDGETPU_CUSTOM_OP = "edgetpu-custom-op"
# The names pycoral loads (pycoral/utils/edgetpu.py), per platform.
EDGETPU_LIB = {"Linux": "libedgetpu.so.1", "Darwin": "libedgetpu.1.dylib", "Windows": "edgetpu.dll"}
EDGETPU_INSTALL = (
    "On Debian/Ubuntu/Raspberry Pi OS: echo 'deb https://packages.cloud.google.com/apt coral-edgetpu-stable main' "
    "| sudo tee /etc/apt/sources.list.d/coral-edgetpu.list && curl https://packages.cloud.google.com/apt/doc/"
    "apt-key.gpg | sudo apt-key add - && sudo apt-get update && sudo apt-get install libedgetpu1-std "
    "(see https://coral.ai/docs/accelerator/get-started/), then plug in the Coral device."
)
# USB ids of the Coral USB Accelerator: before its firmware is loaded, and after.
CORAL_USB_IDS = {("1a6e", "089a"), ("18d1", "9302")}


def interpreter_class() -> Any:
    """The Interpreter class of ai_edge_litert, else of tf.lite, else MissingDependency."""
    if available("ai_edge_litert"):
        return importlib.import_module("ai_edge_litert.interpreter").Interpreter
    if available("tensorflow"):
        return importlib.import_module("tensorflow").lite.Interpreter
    raise MissingDependency(
        "No TFLite runtime is installed (neither ai_edge_litert nor tensorflow).",
        hint="pip install 'edgekit[runtime]'  (or just: pip install ai-edge-litert)",
    )


def tensor_spec(detail: dict[str, Any]) -> TensorSpec:
    """TensorSpec from an Interpreter input/output detail dict."""
    sig = detail.get("shape_signature")
    shape = [int(d) for d in (sig if sig is not None and len(sig) else detail["shape"])]
    q = detail.get("quantization_parameters") or {}
    scales = np.asarray(q.get("scales", []), dtype=np.float64)
    zps = np.asarray(q.get("zero_points", []), dtype=np.int64)
    quant = None
    if scales.size:
        quant = {
            "scale": float(scales[0]) if scales.size == 1 else scales.tolist(),
            "zero_point": int(zps[0]) if zps.size == 1 else zps.tolist(),
        }
        if scales.size > 1:
            quant["axis"] = int(q.get("quantized_dimension", 0))
    return TensorSpec(name=detail["name"], shape=shape, dtype=np.dtype(detail["dtype"]).name, quantization=quant)


def is_edgetpu_model(path: str | Path) -> bool:
    """True when the .tflite holds a compiled Edge TPU subgraph (the custom op's name is in it)."""
    try:
        with open(path, "rb") as f:
            return EDGETPU_CUSTOM_OP.encode() in f.read()
    except OSError:
        return False


def edgetpu_library() -> str:
    return EDGETPU_LIB.get(platform.system(), "libedgetpu.so.1")


def edgetpu_devices(root: str | Path = "/") -> list[str]:
    """Coral devices visible in sysfs/devfs: "usb:<bus-port>" for USB Accelerators, "pci:<n>" for apex."""
    root = Path(root)
    found: list[str] = []
    for dev in sorted((root / "sys/bus/usb/devices").glob("*")):
        try:
            ids = ((dev / "idVendor").read_text().strip(), (dev / "idProduct").read_text().strip())
        except OSError:
            continue
        if ids in CORAL_USB_IDS:
            found.append(f"usb:{dev.name}")
    found += [f"pci:{p.name.rsplit('_', 1)[-1]}" for p in sorted((root / "dev").glob("apex_*"))]
    return found


def edgetpu_runtime_status() -> tuple[bool, str]:
    """Whether libedgetpu (or pycoral) can be loaded here, and if not, why."""
    lib = edgetpu_library()
    try:
        ctypes.CDLL(lib)
    except OSError as exc:
        if available("pycoral") and importlib.util.find_spec("pycoral.utils") is not None:
            return True, "pycoral"
        return False, f"the Edge TPU runtime library {lib} is not installed ({exc})."
    return True, lib


class LiteRT(Runtime):
    name: ClassVar[str] = "litert"
    formats: ClassVar[tuple[str, ...]] = ("tflite", "edgetpu")
    devices: ClassVar[tuple[str, ...]] = ("cpu", "gpu", "edgetpu")

    @classmethod
    def version(cls) -> str | None:
        return version_of("ai-edge-litert") or version_of("tensorflow")

    @classmethod
    def available(cls, device: str = "cpu") -> tuple[bool, str]:
        if device not in cls.devices:
            return False, f"the litert runtime has no device '{device}' (choose from {', '.join(cls.devices)})."
        try:
            interpreter_class()
        except MissingDependency as exc:
            return False, str(exc)
        if device == "edgetpu":
            ok, why = edgetpu_runtime_status()
            if not ok:
                return False, f"{why} {EDGETPU_INSTALL}"
            if not edgetpu_devices():
                return False, ("the Edge TPU runtime is installed but no Coral device is connected (no USB id "
                               "1a6e:089a/18d1:9302, no /dev/apex_*).")
        if device == "gpu":
            from edgekit.runtimes.litert_compiled import gpu_status

            return gpu_status()
        return True, ""

    def load(self, path: str | Path, device: str = "cpu", threads: int | None = None, **options: Any) -> None:
        if device not in self.devices:
            raise UsageError(f"The litert runtime has no device '{device}'.",
                             hint=f"Choose one of: {', '.join(self.devices)}.")
        compiled = is_edgetpu_model(path)
        if compiled and device != "edgetpu":
            raise NotAvailable(
                f"{path} is compiled for the Edge TPU (it contains '{EDGETPU_CUSTOM_OP}'): it needs the Edge TPU "
                "runtime (libedgetpu) and a Coral device.",
                hint="Run it with `--device edgetpu` on a Coral host with libedgetpu installed, or profile the "
                "uncompiled int8 .tflite on the CPU.",
            )
        if device == "edgetpu" and not compiled:
            raise UsageError(
                f"{path} is not compiled for the Edge TPU (no '{EDGETPU_CUSTOM_OP}' inside): on the Edge TPU "
                "device every op of it would run on the host CPU.",
                hint="Compile it with `edgekit convert ... --target edgetpu`, or profile it with `--device cpu`.",
            )
        self.device, self.threads = device, threads
        self.delegate_names: list[str] = []
        self._cm = None
        if device == "gpu" or options.get("api") == "compiled":
            from edgekit.runtimes.litert_compiled import CompiledModelRunner

            self._cm = CompiledModelRunner(path, gpu=device == "gpu", threads=threads)
            self.inputs, self.outputs = self._cm.inputs, self._cm.outputs
            self.delegate_names = self._cm.accelerators
            return
        kwargs: dict[str, Any] = {"model_path": str(path)}
        if threads:
            kwargs["num_threads"] = int(threads)
        delegates = list(options.get("delegates") or [])
        if device == "edgetpu":
            delegates.append(self._edgetpu_delegate(options.get("edgetpu_device")))
            self.delegate_names.append("edgetpu")
        if delegates:
            kwargs["experimental_delegates"] = delegates
        interp_cls = interpreter_class()
        if options.get("xnnpack") is False:
            kwargs["experimental_op_resolver_type"] = importlib.import_module(
                interp_cls.__module__).OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        elif device == "cpu":
            self.delegate_names.append("xnnpack")
        try:
            self.interpreter = interp_cls(**kwargs)
            self.interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as exc:
            raise RuntimeFailure(
                f"LiteRT could not load {path}: {str(exc).strip().splitlines()[0][:400]}",
                hint="Check that the file is a complete .tflite model (re-run `edgekit convert`).",
            ) from exc
        self._in = self.interpreter.get_input_details()
        self._out = self.interpreter.get_output_details()
        self.inputs = [tensor_spec(d) for d in self._in]
        self.outputs = [tensor_spec(d) for d in self._out]
        self._resized: dict[int, tuple[int, ...]] = {}

    @staticmethod
    def _edgetpu_delegate(device: str | None) -> Any:
        """The Edge TPU delegate, or NotAvailable saying what to install or plug in."""
        ok, how = edgetpu_runtime_status()
        if not ok:
            raise NotAvailable(f"The Edge TPU cannot be used here: {how}", hint=EDGETPU_INSTALL)
        opts = {"device": device} if device else None
        try:
            if how == "pycoral":
                return importlib.import_module("pycoral.utils.edgetpu").load_edgetpu_delegate(opts)
            return importlib.import_module("ai_edge_litert.interpreter").load_delegate(how, opts)
        except (ValueError, OSError, RuntimeError) as exc:
            raise NotAvailable(
                f"The Edge TPU runtime is installed but did not open a device ({exc}).",
                hint="Plug in the Coral USB Accelerator (a USB 3 port), check `lsusb` shows 18d1:9302 or "
                "1a6e:089a, and that your user may access it (Coral's udev rules, then log in again).",
            ) from exc

    def _prepare(self, inputs: dict[str, np.ndarray]) -> list[tuple[int, np.ndarray]]:
        """Check dtypes, resize for a new batch; (tensor index, array) per input."""
        it = self.interpreter
        out = []
        for d in self._in:
            if d["name"] not in inputs:
                raise UsageError(f"Missing input '{d['name']}'; the model takes {[x['name'] for x in self._in]}.")
            x = np.asarray(inputs[d["name"]])
            if x.dtype != d["dtype"]:
                raise UsageError(
                    f"Input '{d['name']}' must be {np.dtype(d['dtype']).name}, got {x.dtype.name}.",
                    hint="Use run_float() to have float inputs quantized with the model's scale.",
                )
            if tuple(x.shape) != tuple(d["shape"]) and self._resized.get(d["index"]) != tuple(x.shape):
                it.resize_tensor_input(d["index"], list(x.shape))
                it.allocate_tensors()
                self._resized[d["index"]] = tuple(x.shape)
            out.append((d["index"], np.ascontiguousarray(x)))
        return out

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self._cm is not None:
            return self._cm.run(inputs)
        it = self.interpreter
        try:
            for index, x in self._prepare(inputs):
                it.set_tensor(index, x)
            it.invoke()
            return {d["name"]: it.get_tensor(d["index"]) for d in self._out}
        except UsageError:
            raise
        except (ValueError, RuntimeError) as exc:
            raise RuntimeFailure(f"LiteRT failed to run the model: {str(exc).strip()[:400]}") from exc

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """set_tensor per input, invoke, get_tensor per output: what a LiteRT caller does per inference."""
        if self._cm is not None:
            return self._cm.bind(inputs)
        it = self.interpreter
        feed = self._prepare(inputs)
        set_tensor, invoke, get_tensor = it.set_tensor, it.invoke, it.get_tensor
        out_idx = [d["index"] for d in self._out]

        def call() -> list[np.ndarray]:
            for index, x in feed:
                set_tensor(index, x)
            invoke()
            return [get_tensor(i) for i in out_idx]

        return call

    def info(self) -> dict[str, Any]:
        d: dict[str, Any] = {"delegates": self.delegate_names, "threads": self.threads,
                             "api": "compiled_model" if self._cm is not None else "interpreter"}
        if self._cm is not None:
            d["fully_accelerated"] = self._cm.fully_accelerated
        return d

    def close(self) -> None:
        if self._cm is not None:
            self._cm.close()
            self._cm = None
        self.interpreter = None
