"""The Runtime contract: load an artifact on a device, run named arrays, close.

One small interface per backend (as httpx's transports): vendor exceptions are mapped to
edgekit's own at the border, so callers only ever see EdgekitError subclasses. That border and
the checks every backend needs before it loads are written once, here, as template methods:
`available()`, `load()` and `run()` are concrete and call the backend's `_available()`,
`_load()` and `_run()`; a backend writes only what is its own.
Quantized I/O: `run()` takes and returns arrays in the model's own dtypes; `run_float()` takes
float inputs, quantizes them with the model's scale/zero point and dequantizes the outputs.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core.artifact import TensorSpec
from edgekit.core.border import all_text, find_vendor, vendor_errors
from edgekit.core.errors import EdgekitError, NotAvailable, RuntimeFailure, UsageError
from edgekit.core.vendor import Vendor


class Runtime(ABC):
    """A backend that executes one loaded model."""

    name: ClassVar[str]
    vendor: ClassVar[str | Vendor]  # its library: the key of its format's record (find_vendor), or the Vendor
    formats: ClassVar[tuple[str, ...]]  # artifact formats it can load
    devices: ClassVar[tuple[str, ...]] = ("cpu",)
    # Accelerators that `--device auto` picks, in order, when available (else the CPU). Only
    # devices that are reliably faster than the CPU for CNNs belong here.
    auto_devices: ClassVar[tuple[str, ...]] = ()
    load_hint: ClassVar[str | None] = None  # the hint when the vendor library cannot load a file
    # Vendor exception types that mean the inputs were wrong rather than the run failing
    # ({"module:Name": UsageError}); mapped by type, never by sniffing message text.
    run_errors: ClassVar[Mapping[type[BaseException] | str, type[EdgekitError]]] = {}

    def __init__(self) -> None:
        self.inputs: list[TensorSpec] = []
        self.outputs: list[TensorSpec] = []
        self.device: str = "cpu"
        self.threads: int | None = None
        self._run_border: vendor_errors | None = None

    @classmethod
    def label(cls) -> str:
        """The backend library's name as messages write it ("onnxruntime", "LiteRT", "PyTorch" ...)."""
        return find_vendor(cls.vendor).label

    @classmethod
    def version(cls) -> str | None:
        """The backend library's version, or None where it is not installed."""
        return None

    @classmethod
    def available(cls, device: str = "cpu") -> tuple[bool, str]:
        """Whether this runtime can run on DEVICE here, and if not, why (and what to install)."""
        if device not in cls.devices:
            return False, f"the {cls.name} runtime has no device '{device}' (choose from {', '.join(cls.devices)})."
        return cls._available(device)

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
        """`available()` for one of cls.devices: is the library installed, is the accelerator there."""
        return True, ""

    @classmethod
    def hint_for(cls, text: str) -> str | None:
        """The hint for a failure to load or run a file, chosen from its cause (TEXT: the vendor's message, or a
        crashed child's stderr); by default `load_hint`."""
        return cls.load_hint

    @classmethod
    def run_failure(cls, text: str) -> tuple[str | None, str | None]:
        """(the op, the hint) for a failure to run a loaded model, from the vendor's TEXT; (None, None) where the
        runtime cannot tell (the caller then hints at the inputs the model takes)."""
        return None, None

    @classmethod
    def device_hint(cls, device: str) -> str | None:
        """What to install or do so that DEVICE works: the hint of the NotAvailable `load()` raises."""
        return None

    def load(self, path: str | Path, device: str = "cpu", threads: int | None = None, **options: Any) -> None:
        """Load the model at PATH on DEVICE; fill self.inputs / self.outputs.

        The preamble every backend shares: the file must exist (UsageError), the runtime must be able to
        run on DEVICE here (`_check`: NotAvailable with why and what to install), and what the vendor
        library raises while loading becomes RuntimeFailure at one border (a programming error raised in
        edgekit's own code becomes InternalError: a bug, never the user's file).
        """
        p = Path(path)
        if not p.exists():
            raise UsageError(f"No such file or folder: {p}.", hint="Check the path (relative to the current folder).")
        self._check(p, device)
        self.device, self.threads = device, threads
        with vendor_errors(self.vendor, error=RuntimeFailure, what=f"{self.label()} could not load {p}",
                           hint=lambda exc: self.hint_for(all_text(exc))):
            self._load(p, device, threads, options)
        takes = f"The model takes {[(s.name, s.shape, s.dtype) for s in self.inputs]}."
        self._run_border = vendor_errors(
            self.vendor, error=RuntimeFailure, what=f"{self.label()} failed to run the model",
            hint=lambda exc: self.run_failure(all_text(exc))[1] or takes,
            op=lambda exc: self.run_failure(all_text(exc))[0], errors=self.run_errors)

    def _check(self, path: Path, device: str) -> None:
        """Refuse DEVICE before anything is loaded: NotAvailable saying why, with `device_hint()`."""
        ok, why = self.available(device)
        if not ok:
            raise NotAvailable(f"{self.label()} cannot run on '{device}' here: {why}", hint=self.device_hint(device))

    @abstractmethod
    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        """Load PATH (which exists) on DEVICE (checked); fill self.inputs / self.outputs. Vendor errors are
        mapped by `load()`; raise EdgekitError subclasses for what is the user's to fix."""

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run once on arrays already in the model's dtypes and shapes; vendor errors mapped at the border."""
        if self._run_border is None:
            raise UsageError(f"The {self.name} runtime has no model loaded.", hint="Call load() first.")
        with self._run_border:
            return self._run(inputs)

    @abstractmethod
    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One inference: output name -> array. Vendor errors are mapped by `run()`."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the model (default: nothing to release)."""

    # --- what the measuring loop needs ----------------------------------------------------------
    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """A zero-argument callable that runs one inference on INPUTS (already in the model's dtypes).

        The timed loop of `edgekit profile` calls this, so backends override it to do per call only
        what a real caller must do (copy inputs in, invoke, fetch outputs) and nothing else: inputs
        are validated and converted once here. Vendor exceptions are not mapped inside the call
        (that would cost time on every call); the first inference goes through `run()`, which maps them.
        """
        return functools.partial(self.run, inputs)

    def info(self) -> dict[str, Any]:
        """Backend details worth recording with a measurement: providers, delegates, accelerator."""
        return {}

    def arena_bytes(self) -> int | None:
        """Memory the runtime itself reports for the model (arena, device allocator), where exposed."""
        return None

    def check_batch(self, batch: int) -> None:
        """UsageError when the model cannot take a batch of BATCH (a static, different batch dim)."""
        for spec in self.inputs:
            if spec.shape and spec.shape[0] > 0 and spec.shape[0] != batch:
                raise UsageError(
                    f"Input '{spec.name}' has a static batch of {spec.shape[0]}, so a batch of {batch} cannot run.",
                    hint=f"Use --batch {spec.shape[0]}, or re-convert with a dynamic batch or `--batch {batch}`.",
                )

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- float convenience over quantized I/O -------------------------------------------------
    def run_float(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on float inputs: quantize per the model's inputs, dequantize the outputs to float32."""
        prepared = {spec.name: quantize(inputs[spec.name], spec) for spec in self.inputs if spec.name in inputs}
        missing = [s.name for s in self.inputs if s.name not in inputs]
        if missing:
            raise UsageError(f"Missing input(s) {missing}; the model takes {[s.name for s in self.inputs]}.")
        out = self.run(prepared)
        by_name = {s.name: s for s in self.outputs}
        return {k: dequantize(v, by_name.get(k)) for k, v in out.items()}

    def random_inputs(self, rng: np.random.Generator | None = None, batch: int = 1) -> dict[str, np.ndarray]:
        """Random inputs of the right dtype, shape and range (dynamic dims become BATCH or 1)."""
        rng = rng or np.random.default_rng(0)
        return {s.name: random_array(s, rng, batch) for s in self.inputs}


def input_array(inputs: dict[str, np.ndarray], spec: TensorSpec, specs: list[TensorSpec],
                check_dtype: bool = True) -> np.ndarray:
    """INPUTS[spec.name] as an array, or UsageError naming what is missing or of the wrong dtype."""
    if spec.name not in inputs:
        raise UsageError(f"Missing input '{spec.name}'; the model takes {[s.name for s in specs]}.")
    x = np.asarray(inputs[spec.name])
    if check_dtype and x.dtype != np.dtype(spec.dtype):
        raise UsageError(f"Input '{spec.name}' must be {spec.dtype}, got {x.dtype.name}.",
                         hint="Use run_float() to have float inputs quantized with the model's scale.")
    return x


def concrete_shape(spec: TensorSpec, batch: int = 1) -> list[int]:
    return [batch if i == 0 and d <= 0 else (d if d > 0 else 1) for i, d in enumerate(spec.shape)]


def random_array(spec: TensorSpec, rng: np.random.Generator, batch: int = 1) -> np.ndarray:
    shape = concrete_shape(spec, batch)
    dt = np.dtype(spec.dtype)
    if dt.kind == "f":
        return rng.random(shape, dtype=np.float32).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -128), min(info.max, 255)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 1, size=shape, endpoint=True).astype(bool)
    raise UsageError(f"Cannot make random data for input '{spec.name}' of dtype {spec.dtype}.")


def _scale_zp(spec: TensorSpec) -> tuple[np.ndarray, np.ndarray] | None:
    q = spec.quantization
    return None if q is None else q.arrays(len(spec.shape))


def quantize(x: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """Float X to SPEC's dtype: affine quantization for int8/uint8 tensors, a cast otherwise."""
    dt = np.dtype(spec.dtype)
    x = np.asarray(x)
    if x.dtype == dt:
        return x
    sz = _scale_zp(spec)
    if dt.kind in "iu" and sz is not None and x.dtype.kind == "f":
        scale, zp = sz
        info = np.iinfo(dt)
        return np.clip(np.round(x / scale + zp), info.min, info.max).astype(dt)
    return x.astype(dt)


def dequantize(y: np.ndarray, spec: TensorSpec | None) -> np.ndarray:
    """Model output Y to float32, undoing affine quantization where the output has it."""
    y = np.asarray(y)
    if spec is not None and y.dtype.kind in "iu":
        sz = _scale_zp(spec)
        if sz is not None:
            scale, zp = sz
            return ((y.astype(np.float32) - zp) * scale).astype(np.float32)
    return y.astype(np.float32) if y.dtype.kind == "f" else y
