"""PyTorch backend: the source model itself, eager, on the CPU or a CUDA GPU: the reference baseline.

It runs a source form, so it lives with the loaders it shares (edgekit.sources sits above edgekit.runtimes: the
.tflite source runs LiteRT as its reference), and the torch format's record names it.

Loads what `edgekit convert` takes as a PyTorch source: a `.pt2` ExportedProgram, a TorchScript
archive, or a state_dict with the factory that builds the module (`factory="pkg.mod:build"`, with
`input_shape`); torch.save archives go through edgekit.sources.torch, so a pickled whole module
(which runs code on load) is refused here exactly as by `convert`, unless `trust_model=True`.
`threads` sets torch's intra-op pool, which is global to the process (torch has no per-model pool).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import available, require, version_of
from edgekit.core.artifact import TensorSpec
from edgekit.core.errors import UsageError
from edgekit.runtimes.base import Runtime, input_array

CUDA_HINT = ("Install a CUDA build of PyTorch on a machine with an NVIDIA GPU (see pytorch.org for the pip "
             "line matching your CUDA version); the CPU build here has no CUDA.")


def _dtype_name(dt: Any) -> str:
    return str(dt).replace("torch.", "")


def _shape(shape: Any) -> list[int]:
    return [int(d) if isinstance(d, int) or str(d).isdigit() else -1 for d in shape]


class TorchRuntime(Runtime):
    name: ClassVar[str] = "torch"
    vendor: ClassVar[str] = "torch"
    formats: ClassVar[tuple[str, ...]] = ("torch",)
    devices: ClassVar[tuple[str, ...]] = ("cpu", "gpu", "cuda")
    auto_devices: ClassVar[tuple[str, ...]] = ("gpu",)
    load_hint: ClassVar[str | None] = "Check that the file is complete and was saved by a compatible torch."

    @classmethod
    def version(cls) -> str | None:
        return version_of("torch")

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
        if not available("torch"):
            return False, "PyTorch is not installed: pip install 'edgekit[convert]'  (or just: pip install torch)"
        if device in ("gpu", "cuda"):
            torch = require("torch")
            if not torch.cuda.is_available():
                return False, f"this PyTorch ({torch.__version__}) sees no CUDA GPU. {CUDA_HINT}"
        return True, ""

    @classmethod
    def device_hint(cls, device: str) -> str | None:
        return CUDA_HINT

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        torch = require("torch", purpose="run PyTorch models")
        from edgekit.sources.detect import detect

        self._torch = torch
        self.device = "gpu" if device == "cuda" else device
        self._dev = torch.device("cuda" if self.device == "gpu" else "cpu")
        if threads:
            torch.set_num_threads(int(threads))
        kind = detect(path)
        self.kind = kind
        module, specs = self._load_module(torch, path, kind, options)
        self.module = module
        given = options.get("input_shape")
        if given:
            shape = [int(d) for d in given]
            if kind != "torch-exported":
                shape[0] = -1  # an eager module takes any batch; the given one is an example
            specs = [TensorSpec(name=specs[0].name if specs else "input", shape=shape,
                                dtype=str(options.get("input_dtype", "float32")),
                                layout="NCHW" if len(shape) == 4 else None)]
        if not specs:
            raise UsageError(
                f"{path} ({kind}) does not record its input shape.",
                hint="Pass it, batch first: --input-shape 1,3,224,224 (bench takes it from the ONNX artifact).",
            )
        self.inputs = specs
        self.outputs = self._output_specs()

    def _load_module(self, torch: Any, path: Path, kind: str, options: dict[str, Any]) -> tuple[Any, list]:
        """(callable module on self._dev, input specs known from the file)."""
        if kind == "torch-exported":
            ep = torch.export.load(str(path))
            specs = []
            user = set(ep.graph_signature.user_inputs)
            for node in ep.graph.nodes:
                if node.op == "placeholder" and node.name in user and "val" in node.meta:
                    v = node.meta["val"]
                    specs.append(TensorSpec(name=node.name, shape=_shape(v.shape), dtype=_dtype_name(v.dtype),
                                            layout="NCHW" if v.dim() == 4 else None))
            self._out_names = [str(n) for n in ep.graph_signature.user_outputs]
            return ep.module().to(self._dev), specs
        self._out_names = []
        if kind == "torchscript":
            import warnings

            with warnings.catch_warnings():  # deprecated in torch 2.13, and still a format users have
                warnings.simplefilter("ignore", DeprecationWarning)
                return torch.jit.load(str(path), map_location=self._dev).eval(), []
        # torch.save archives: the source loader's rules (weights_only first; a state_dict needs the
        # factory; a pickled module only with trust_model), so both commands refuse the same files.
        from edgekit.sources.base import LoadOptions
        from edgekit.sources.torch import load as load_source

        shape = options.get("input_shape")
        opts = LoadOptions(factory=options.get("factory"), trust_model=bool(options.get("trust_model")),
                           input_shape=[int(d) for d in shape] if shape else None)
        src = load_source(path, opts, kind)
        spec = TensorSpec(name=src.input_name, shape=list(src.input_shape), dtype=src.input_dtype, layout=src.layout)
        return src.extra["module"].to(self._dev), [spec]

    def _output_specs(self) -> list[TensorSpec]:
        """Output specs without running the model (that would be the first inference, timed elsewhere);
        the shapes are filled in by the first run()."""
        names = self._out_names or ["output_0"]
        return [TensorSpec(name=n, shape=[-1], dtype="float32") for n in names]

    def _tensors(self, inputs: dict[str, np.ndarray]) -> list[Any]:
        torch = self._torch
        out = []
        for spec in self.inputs:
            x = input_array(inputs, spec, self.inputs, check_dtype=False)  # eager modules cast or reject themselves
            out.append(torch.from_numpy(np.ascontiguousarray(x)).to(self._dev))
        return out

    def _flatten(self, y: Any) -> list[Any]:
        if isinstance(y, (list, tuple)):
            return [t for item in y for t in self._flatten(item)]
        if isinstance(y, dict):
            return [t for item in y.values() for t in self._flatten(item)]
        return [y]

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self.bind(inputs)()
        if len(values) != len(self.outputs):
            self.outputs = [TensorSpec(name=f"output_{i}", shape=[-1], dtype="float32") for i in range(len(values))]
        for spec, v in zip(self.outputs, values, strict=True):
            spec.shape, spec.dtype = list(v.shape), v.dtype.name
        return {s.name: v for s, v in zip(self.outputs, values, strict=True)}

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], list[np.ndarray]]:
        """Inputs become tensors on the device once; per call: forward, synchronise, outputs to numpy."""
        torch, module, flatten = self._torch, self.module, self._flatten
        tensors = self._tensors(inputs)
        sync = torch.cuda.synchronize if self._dev.type == "cuda" else None
        no_grad = torch.inference_mode

        def call() -> list[np.ndarray]:
            with no_grad():
                y = module(*tensors)
            if sync is not None:
                sync()
            return [t.detach().cpu().numpy() for t in flatten(y)]

        return call

    def arena_bytes(self) -> int | None:
        if self._dev.type == "cuda":
            return int(self._torch.cuda.max_memory_allocated(self._dev))
        return None

    def info(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "mode": "eager", "threads": self._torch.get_num_threads()}
        if self._dev.type == "cuda":
            d["gpu"] = self._torch.cuda.get_device_name(self._dev)
        return d

    def close(self) -> None:
        self.module = None
