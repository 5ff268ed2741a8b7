"""ncnn backend: an ncnn model (`.ncnn.param` + `.ncnn.bin`) on the CPU, or on a Vulkan GPU where ncnn sees one.

I/O: the .param's Input layers are the inputs (their shapes from the layer's own `0=w 1=h 11=d 2=c`, which the ncnn
target writes, with a leading batch of 1: ncnn has no batch dimension, so a batch of N is N extractions, one
sample each); the blobs no layer consumes are the outputs, their shapes from one run on zeros at load. The ncnn
target names the blobs after the source's tensors (pnnx calls them in0/out0), so the names reported are the
source's. Everything is float32 in and out: ncnn converts to its storage precision inside.

Precision options (`info()` records them): ncnn's defaults store weights and activations in fp16 and compute in
fp16 where the CPU has fp16 arithmetic (Armv8.2: a Pi 5's Cortex-A76; on x86 with AVX it stores in fp16), so
an fp32 model under the defaults is not an fp32 run (measured: a Pi 5's output at cosine 0.99937 of the A72's).
Load option `fp16`: "auto" (the default) runs an fp32 artifact with fp16 storage and arithmetic off (a real fp32
row, as the OpenVINO runtime pins f32) and an fp16 artifact (weights stored in fp16, read from the .bin) with fp16
storage and fp32 arithmetic, the closest to what it was validated with on x86: with ncnn's defaults a Pi 5's A76
computes it in fp16, which moved a MobileNetV2's outputs by 9% (emulated A76 against A72 and x86); with this default,
1.6% (docs/results/ncnn.md: some A76 kernels still compute in fp16, so a Pi 5's verdict is taken there). "off",
"storage" (fp16 storage and packing, fp32 arithmetic) and "on" (ncnn's defaults: what an ncnn app runs, fp16
arithmetic where the core has it: faster on a Pi 5, to be validated there with `--validate-on pi5`) choose for any
artifact.
Devices: "cpu"; "gpu" where ncnn's Vulkan finds a GPU that is not a CPU renderer (llvmpipe, SwiftShader are not
counted: they are the CPU), else NotAvailable naming what it sees.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import require, version_of
from edgekit.core.artifact import TensorSpec
from edgekit.core.errors import MissingDependency, RuntimeFailure, UnsupportedModel, UsageError
from edgekit.runtimes.base import Runtime, input_array

FP16_MODES = ("auto", "off", "storage", "on")
LOAD_HINT = ("An ncnn model is two files: model.ncnn.param and model.ncnn.bin beside it, from the same conversion "
             "(re-run `edgekit convert ... --target ncnn`).")
GPU_HINT = ("ncnn runs on a GPU through Vulkan: install the GPU's Vulkan driver (NVIDIA's driver ships one; "
            "Mesa's radv/anv for AMD/Intel; `vulkaninfo` lists what is seen).")
_CPU_GPU_TYPE = 3  # ncnn GpuInfo.type(): 0 discrete, 1 integrated, 2 virtual, 3 cpu (a software renderer)


def ncnn_module() -> Any:
    return require("ncnn", extra="ncnn", purpose="run ncnn models")


# Asked in a child: creating ncnn's Vulkan instance in a process that has imported torch or TensorFlow aborts that
# process when it exits ("free(): invalid pointer", seen here with Mesa's llvmpipe as the only Vulkan device), so a
# question about devices (bench, serve's --device auto, `available`) must not be asked where the answer is used.
_PROBE = ("import json, ncnn\n"
          "print(json.dumps([[i, str(ncnn.get_gpu_info(i).device_name()), int(ncnn.get_gpu_info(i).type())]"
          " for i in range(ncnn.get_gpu_count())]))")


@functools.lru_cache(maxsize=1)
def gpus() -> tuple[tuple[int, str, int], ...]:
    """(index, name, type) of every Vulkan device ncnn sees, asked in a child process (see _PROBE); () where none,
    no Vulkan loader, or the child fails."""
    import json
    import subprocess
    import sys

    ncnn_module()  # MissingDependency here, not a silent "no GPU"
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120,
                              check=False)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("[")]
        return tuple((int(i), str(name), int(kind)) for i, name, kind in json.loads(lines[-1])) if lines else ()
    except (OSError, subprocess.TimeoutExpired, ValueError, TypeError):
        return ()


def real_gpus() -> list[tuple[int, str, int]]:
    return [g for g in gpus() if g[2] != _CPU_GPU_TYPE]


def weights_path(param: Path) -> Path:
    """The .bin beside PARAM; UsageError where it is missing."""
    weights = param.with_suffix(".bin")
    if not weights.is_file():
        raise UsageError(f"{param} is an ncnn .param, but its weights file {weights.name} is not beside it.",
                         hint=LOAD_HINT)
    return weights


def fp16_options(mode: str, stored: str) -> dict[str, bool]:
    """The ncnn Option flags for fp16 MODE on an artifact whose weights are stored in STORED precision."""
    if mode not in FP16_MODES:
        raise UsageError(f"Unknown ncnn fp16 mode '{mode}'.", hint=f"Choose from {', '.join(FP16_MODES)}.")
    if mode == "auto":  # what the artifact was validated with, on every CPU (see the module doc)
        mode = "storage" if stored == "fp16" else "off"
    storage, arithmetic = mode in ("storage", "on"), mode == "on"
    return {"use_fp16_storage": storage, "use_fp16_packed": storage, "use_fp16_arithmetic": arithmetic,
            "use_bf16_storage": False}


class Ncnn(Runtime):
    name: ClassVar[str] = "ncnn"
    vendor: ClassVar[str] = "ncnn"
    formats: ClassVar[tuple[str, ...]] = ("ncnn",)
    devices: ClassVar[tuple[str, ...]] = ("cpu", "gpu")
    load_hint: ClassVar[str | None] = LOAD_HINT

    @classmethod
    def version(cls) -> str | None:
        return version_of("ncnn")

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
        try:
            ncnn_module()
        except MissingDependency as exc:
            return False, str(exc)
        if device == "cpu" or real_gpus():
            return True, ""
        seen = ", ".join(f"{name} (a CPU renderer)" if kind == _CPU_GPU_TYPE else name for _, name, kind in gpus())
        return False, f"ncnn {cls.version()} here sees no Vulkan GPU (it sees {seen or 'none'})."

    @classmethod
    def device_hint(cls, device: str) -> str | None:
        return GPU_HINT if device == "gpu" else None

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        from edgekit.ncnn.param import read_param
        from edgekit.ncnn.weights import stored_precision

        ncnn = ncnn_module()
        param = read_param(path)
        weights = weights_path(path)
        self.stored = stored_precision(param.layers, weights)
        self.fp16_mode = str(options.get("fp16", "auto")).lower()
        flags = fp16_options(self.fp16_mode, self.stored)
        net = ncnn.Net()
        for key, value in flags.items():
            setattr(net.opt, key, value)
        if threads:
            net.opt.num_threads = int(threads)
        self.gpu_name: str | None = None
        if device == "gpu":
            index, self.gpu_name, _ = real_gpus()[0]
            net.opt.use_vulkan_compute = True
            net.set_vulkan_device(index)
        if net.load_param(str(path)) != 0 or net.load_model(str(weights)) != 0:
            from edgekit.ncnn.param import unknown_layers

            unknown = unknown_layers(param, lambda t: int(ncnn.layer_to_index(t)) >= 0)
            why = (f"layers ncnn {self.version()} does not have: {', '.join(unknown)}" if unknown
                   else "a .bin that does not match the .param, or a layer's parameters it refuses")
            raise RuntimeFailure(f"ncnn {self.version()} could not load {path.name} ({why}).", hint=LOAD_HINT,
                                 op=next(iter(unknown), None))
        self.net, self.ncnn = net, ncnn
        self.inputs = []
        for layer in param.inputs:
            shape = param.input_shape(layer)
            if shape is None:
                raise UnsupportedModel(f"{path.name}'s input '{layer.tops[0]}' has no shape in the .param.",
                                       hint="Convert with `edgekit convert --target ncnn` (it writes the shapes), or "
                                            "give the Input layer its 0=w 1=h 2=c.")
            self.inputs += [TensorSpec(name=top, shape=shape, dtype="float32") for top in layer.tops]
        names = param.output_names()
        zeros = {s.name: np.zeros(s.shape, np.float32) for s in self.inputs}
        got = self._run(zeros)  # ncnn says an output's shape only by computing it
        self.outputs = [TensorSpec(name=n, shape=list(got[n].shape), dtype="float32") for n in names]

    def _mats(self, inputs: dict[str, np.ndarray]) -> list[list[tuple[str, Any, np.ndarray]]]:
        """Per sample: (input name, ncnn.Mat, the array it reads) for every input; UsageError for a wrong shape."""
        arrays = []
        for spec in self.inputs:
            x = input_array(inputs, spec, self.inputs, check_dtype=False)
            if x.ndim != len(spec.shape) or list(x.shape[1:]) != spec.shape[1:]:
                raise UsageError(f"Input '{spec.name}' must have shape {spec.shape} (any batch), got {list(x.shape)}.")
            arrays.append((spec.name, x))
        batch = len(arrays[0][1]) if arrays else 0
        samples = []
        for b in range(batch):
            row = []
            for name, x in arrays:
                sample = np.ascontiguousarray(x[b], dtype=np.float32)  # kept alive beside the Mat that reads it
                row.append((name, self.ncnn.Mat(sample), sample))
            samples.append(row)
        return samples

    def _extract(self, row: list[tuple[str, Any, np.ndarray]], names: list[str]) -> list[np.ndarray]:
        ex = self.net.create_extractor()
        for name, mat, _ in row:
            if ex.input(name, mat) != 0:
                raise RuntimeFailure(f"ncnn has no input blob '{name}'.", hint=LOAD_HINT)
        out = []
        for name in names:
            ret, mat = ex.extract(name)
            if ret != 0:
                raise RuntimeFailure(f"ncnn failed computing '{name}' (error {ret}).",
                                     hint="Run it with --device cpu and fp16 off to tell a kernel failure apart.")
            out.append(np.array(mat.numpy(), dtype=np.float32))  # a copy: the Mat's memory goes with the extractor
        return out

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        names = [o.name for o in self.outputs] or self._output_names()
        per_sample = [self._extract(row, names) for row in self._mats(inputs)]
        return {name: np.stack([s[i] for s in per_sample]) for i, name in enumerate(names)}

    def _output_names(self) -> list[str]:
        return [str(n) for n in self.net.output_names()]

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        """One extractor per sample, inputs in, every output out as an array: what an ncnn caller does."""
        rows = self._mats(inputs)
        names = [o.name for o in self.outputs]
        extract = self._extract

        def call() -> list[list[np.ndarray]]:
            return [extract(row, names) for row in rows]

        return call

    def info(self) -> dict[str, Any]:
        opt = self.net.opt
        out: dict[str, Any] = {
            "device": self.device, "num_threads": int(opt.num_threads), "fp16_mode": self.fp16_mode,
            "weights_stored": self.stored,
            **{k: bool(getattr(opt, k)) for k in ("use_fp16_storage", "use_fp16_packed", "use_fp16_arithmetic",
                                                  "use_bf16_storage", "use_packing_layout", "use_vulkan_compute")},
        }
        support = {name: bool(getattr(self.ncnn, name)()) for name in
                   ("cpu_support_arm_asimdhp", "cpu_support_x86_avx2") if hasattr(self.ncnn, name)}
        out["cpu_fp16_arithmetic"] = support.get("cpu_support_arm_asimdhp", False)
        out["cpu_support"] = support
        if self.gpu_name:
            out["gpu"] = self.gpu_name
        return out

    def close(self) -> None:
        net = getattr(self, "net", None)
        if net is not None:
            net.clear()
        self.net = None


__all__ = ["FP16_MODES", "Ncnn", "fp16_options", "gpus", "real_gpus", "weights_path"]
