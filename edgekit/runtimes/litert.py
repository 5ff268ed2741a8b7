"""LiteRT (TFLite) backend: `ai_edge_litert`, falling back to `tf.lite` where it is absent.

Devices:
- "cpu": the Interpreter with XNNPACK (LiteRT's default delegate) and `threads`; load option
  `kernels`: "xnnpack", "builtin" (no delegate; `xnnpack=False` says the same) or "auto" (the
  default: XNNPACK, and the builtin kernels where XNNPACK refuses the model; `info()` says which);
- "edgetpu": a model compiled by `edgetpu_compiler`, through the Edge TPU delegate
  (`libedgetpu.so.1` loaded with `load_delegate`, or Coral's `pycoral` where it is importable);
- "gpu": LiteRT's CompiledModel API with its GPU accelerator (WebGPU/OpenCL/Metal, whichever the
  platform has), falling back to the CPU for ops the GPU cannot run (see litert_compiled.py).
`LiteRT` holds one backend object (`InterpreterBackend` here, or litert_compiled's
`CompiledModelBackend`) and delegates to it; the shared I/O helpers are in litert_io.py.
tflite-runtime is deliberately not used: its last release (2.14) breaks with numpy 2 and cannot
run models written by current converters.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import available, version_of
from edgekit.core.border import all_text, is_edgekit_bug, vendor_errors, vendor_message
from edgekit.core.errors import EdgekitError, MissingDependency, NotAvailable, RuntimeFailure, UsageError
from edgekit.core.sniff import EDGETPU_CUSTOM_OP, is_edgetpu_model
from edgekit.edgetpu.coral import runtime_install_hint
from edgekit.runtimes import litert_errors
from edgekit.runtimes.base import Runtime, input_array
from edgekit.runtimes.litert_compiled import GPU_HINT, CompiledModelBackend, gpu_status
from edgekit.runtimes.litert_io import LiteRTBackend, interpreter_class, tensor_spec

# The names pycoral loads (pycoral/utils/edgetpu.py), per platform.
EDGETPU_LIB = {"Linux": "libedgetpu.so.1", "Darwin": "libedgetpu.1.dylib", "Windows": "edgetpu.dll"}
EDGETPU_INSTALL = runtime_install_hint()
# USB ids of the Coral USB Accelerator: before its firmware is loaded, and after.
CORAL_USB_IDS = {("1a6e", "089a"), ("18d1", "9302")}


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


def _edgetpu_delegate(device: str | None) -> Any:
    """The Edge TPU delegate, or NotAvailable saying what to install or plug in."""
    ok, how = edgetpu_runtime_status()
    if not ok:
        raise NotAvailable(f"The Edge TPU cannot be used here: {how}", hint=EDGETPU_INSTALL)
    opts = {"device": device} if device else None
    with vendor_errors("litert", error=NotAvailable, what="The Edge TPU runtime is installed but did not open a device",
                       hint="Plug in the Coral USB Accelerator (a USB 3 port), check `lsusb` shows 18d1:9302 or "
                       "1a6e:089a, and that your user may access it (Coral's udev rules, then log in again)."):
        if how == "pycoral":
            return importlib.import_module("pycoral.utils.edgetpu").load_edgetpu_delegate(opts)
        return importlib.import_module("ai_edge_litert.interpreter").load_delegate(how, opts)


KERNELS = ("auto", "xnnpack", "builtin")


def kernel_choice(options: dict[str, Any]) -> str:
    """The "kernels" load option ("auto" by default; the older `xnnpack=False` means "builtin"), checked."""
    if options.get("xnnpack") is False:
        return "builtin"
    kernels = str(options.get("kernels") or "auto").lower()
    if kernels not in KERNELS:
        raise UsageError(f"Unknown LiteRT kernels '{kernels}'.",
                         hint=f"Choose from {', '.join(KERNELS)} (--option kernels=builtin).")
    return kernels


class InterpreterBackend:
    """The classic Interpreter: XNNPACK on the CPU (unless `xnnpack=False`), or the Edge TPU delegate."""

    def __init__(self, path: Path, device: str, threads: int | None, options: dict[str, Any],
                 kernels: str = "xnnpack") -> None:
        self.delegates: list[str] = []
        kwargs: dict[str, Any] = {"model_path": str(path)}
        if threads:
            kwargs["num_threads"] = int(threads)
        delegates = list(options.get("delegates") or [])
        if device == "edgetpu":
            delegates.append(_edgetpu_delegate(options.get("edgetpu_device")))
            self.delegates.append("edgetpu")
        if delegates:
            kwargs["experimental_delegates"] = delegates
        interp_cls = interpreter_class()
        self.kernels: str | None = None  # on the CPU: which kernels run the ops, "xnnpack" or "builtin"
        if kernels == "builtin":
            kwargs["experimental_op_resolver_type"] = importlib.import_module(
                interp_cls.__module__).OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
            self.kernels = "builtin" if device == "cpu" else None
        elif device == "cpu":
            self.delegates.append("xnnpack")
            self.kernels = "xnnpack"
        self.interpreter = interp_cls(**kwargs)
        self.interpreter.allocate_tensors()
        self._in = self.interpreter.get_input_details()
        self._out = self.interpreter.get_output_details()
        self.inputs = [tensor_spec(d) for d in self._in]
        self.outputs = [tensor_spec(d) for d in self._out]
        self._resized: dict[int, tuple[int, ...]] = {}

    def _prepare(self, inputs: dict[str, np.ndarray]) -> list[tuple[int, np.ndarray]]:
        """Check dtypes, resize for a new batch; (tensor index, array) per input."""
        it = self.interpreter
        out = []
        for d, spec in zip(self._in, self.inputs, strict=True):
            x = input_array(inputs, spec, self.inputs)
            # against the shape the input has now: after a batch of 7, a batch of 1 resizes it back
            if tuple(x.shape) != self._resized.get(d["index"], tuple(d["shape"])):
                it.resize_tensor_input(d["index"], list(x.shape))
                it.allocate_tensors()
                self._resized[d["index"]] = tuple(x.shape)
            out.append((d["index"], np.ascontiguousarray(x)))
        return out

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        it = self.interpreter
        for index, x in self._prepare(inputs):
            it.set_tensor(index, x)
        it.invoke()
        return {d["name"]: it.get_tensor(d["index"]) for d in self._out}

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """set_tensor per input, invoke, get_tensor per output: what a LiteRT caller does per inference."""
        feed = self._prepare(inputs)
        it = self.interpreter
        set_tensor, invoke, get_tensor = it.set_tensor, it.invoke, it.get_tensor
        out_idx = [d["index"] for d in self._out]

        def call() -> list[np.ndarray]:
            for index, x in feed:
                set_tensor(index, x)
            invoke()
            return [get_tensor(i) for i in out_idx]

        return call

    def info(self) -> dict[str, Any]:
        return {"api": "interpreter", **({"kernels": self.kernels} if self.kernels else {})}

    def close(self) -> None:
        self.interpreter = None


def _explained(path: Path, make: Callable[[], LiteRTBackend], what: str | None = None) -> LiteRTBackend:
    """MAKE(), with a LiteRT failure whose cause is known (custom op, XNNPACK refusal) told as that cause.

    A cause not recognised is raised as it is (the load() border maps it), or with WHAT as RuntimeFailure.
    """
    try:
        return make()
    except Exception as exc:
        if is_edgekit_bug(exc) or isinstance(exc, EdgekitError):
            raise
        text = all_text(exc)
        message = litert_errors.explain(path, text)
        if message is None and what is None:
            raise
        raise RuntimeFailure(message or f"{what}: {vendor_message(exc)}", hint=litert_errors.hint_for(text)) from exc


class LiteRT(Runtime):
    name: ClassVar[str] = "litert"
    vendor: ClassVar[str] = "litert"
    formats: ClassVar[tuple[str, ...]] = ("tflite", "edgetpu")
    devices: ClassVar[tuple[str, ...]] = ("cpu", "gpu", "edgetpu")
    load_hint: ClassVar[str | None] = litert_errors.HINT_MALFORMED

    @classmethod
    def hint_for(cls, text: str) -> str | None:
        """Custom op, XNNPACK refusal, malformed file: each its own hint (edgekit.runtimes.litert_errors)."""
        return litert_errors.hint_for(text)

    def run_failure(self, text: str) -> tuple[str | None, str | None]:  # type: ignore[override]  # needs the file
        """The op LiteRT names ("Node number 47 (DIV) failed to invoke") and what fits its check, read from the
        loaded file where the check needs it (an int8 DIV's divisor)."""
        return litert_errors.invoke_failure(text, self._path)

    # The CPU kernel paths `check_artifact` validates with, in order: the next when one fails (load option "kernels").
    kernel_paths: ClassVar[tuple[str, ...]] = ("xnnpack", "builtin")

    def __init__(self) -> None:
        super().__init__()
        self._backend: LiteRTBackend | None = None
        self._path: Path | None = None  # the file loaded, which an int8 DIV's run failure is explained from
        self.kernels_note: str | None = None  # why the kernels measured are not the ones asked for

    @classmethod
    def version(cls) -> str | None:
        return version_of("ai-edge-litert") or version_of("tensorflow")

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
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
            return gpu_status()
        return True, ""

    @classmethod
    def device_hint(cls, device: str) -> str | None:
        return {"gpu": GPU_HINT, "edgetpu": EDGETPU_INSTALL}.get(device)

    def _check(self, path: Path, device: str) -> None:
        """A compiled Edge TPU model runs only on the Edge TPU, and the Edge TPU only runs compiled models.

        On the Edge TPU, opening the delegate is the check (`_edgetpu_delegate`), not the sysfs scan that
        `available()` does for `--device auto`: a Coral that the scan misses still gets its chance.
        """
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
        if device != "edgetpu":
            super()._check(path, device)

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        self.kernels_note, self._path = None, path
        if device == "gpu" or options.get("api") == "compiled":
            self._backend = CompiledModelBackend(path, gpu=device == "gpu", threads=threads)
        else:
            self._backend = self._interpreter(path, device, threads, options)
        self.inputs, self.outputs = self._backend.inputs, self._backend.outputs

    def _interpreter(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> LiteRTBackend:
        """The Interpreter backend with the kernels asked for; "auto" falls back to the builtin ones.

        XNNPACK refuses some models that LiteRT's builtin kernels run (it fails to prepare on scales
        or shapes it does not support); with "auto" that refusal is noted and the model is loaded again
        without the delegate. The builtin kernels may still abort on such a model: callers that must
        survive that load it in a child process first (edgekit.validation.artifact.check_artifact, profile).
        """
        kernels = kernel_choice(options)
        if kernels != "auto" or device != "cpu":
            return _explained(path, lambda: InterpreterBackend(path, device, threads, options,
                                                               "builtin" if kernels == "builtin" else "xnnpack"))
        try:
            return _explained(path, lambda: InterpreterBackend(path, device, threads, options, "xnnpack"),
                              what="XNNPACK refused the model")
        except RuntimeFailure as refused:
            if not refused.message.startswith("XNNPACK"):  # a custom op, a malformed file: no kernels would do
                raise
            self.kernels_note = refused.message
            if os.environ.get("EDGEKIT_ISOLATED"):  # in a child: if the builtin kernels abort, the parent reads why
                sys.stderr.write(f"{refused.message}; falling back to LiteRT's builtin kernels\n")
                sys.stderr.flush()
            return _explained(path, lambda: InterpreterBackend(path, device, threads, options, "builtin"))

    def _loaded(self) -> LiteRTBackend:
        if self._backend is None:
            raise UsageError("The litert runtime has no model loaded.", hint="Call load() first.")
        return self._backend

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self._loaded().run(inputs)

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """The backend's own per-inference call (see InterpreterBackend.bind, CompiledModelBackend.bind)."""
        return self._loaded().bind(inputs)

    def info(self) -> dict[str, Any]:
        backend = self._backend
        note = {"kernels_note": self.kernels_note} if self.kernels_note else {}
        return {"delegates": list(backend.delegates) if backend else [], "threads": self.threads,
                **(backend.info() if backend else {}), **note}

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None
