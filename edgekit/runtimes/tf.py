"""TensorFlow SavedModel backend: CPU, GPU, and Cloud TPU through TF's TPU cluster resolver.

A SavedModel signature (`signature`, default "serving_default") is called as a concrete function.
On a TPU the model is loaded under a TPUStrategy and each call is `strategy.run` in a tf.function.
Whether a Cloud TPU is reachable is decided from local signals first (TPU_NAME, a TPU VM's
/dev/accel* or /dev/vfio, libtpu), so asking on an ordinary machine never waits on the network.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from edgekit.core._deps import available, require, version_of
from edgekit.core.artifact import TensorSpec
from edgekit.core.border import vendor_message
from edgekit.core.errors import NotAvailable, UsageError
from edgekit.runtimes.base import Runtime, input_array

TPU_HINT = ("Run on a Cloud TPU VM (or set TPU_NAME to your TPU node) with a TensorFlow build that has TPU "
            "support: see https://cloud.google.com/tpu/docs/run-calculation-tensorflow.")
GPU_HINT = ("TensorFlow needs an NVIDIA GPU and its CUDA libraries: pip install 'tensorflow[and-cuda]' on a "
            "Linux machine with an NVIDIA driver.")


def tpu_signals(root: str | Path = "/") -> list[str]:
    """Local evidence of a Cloud TPU: env vars, TPU VM device nodes, the libtpu package."""
    root = Path(root)
    signals = [f"${v}" for v in ("TPU_NAME", "COLAB_TPU_ADDR", "TPU_ACCELERATOR_TYPE") if os.environ.get(v)]
    signals += [str(p) for p in sorted((root / "dev").glob("accel*"))]
    if available("libtpu"):
        signals.append("libtpu")
    return signals


def _tf() -> Any:
    return require("tensorflow", purpose="run TensorFlow SavedModels")


class TFRuntime(Runtime):
    name: ClassVar[str] = "tf"
    vendor: ClassVar[str] = "tensorflow"
    formats: ClassVar[tuple[str, ...]] = ("savedmodel",)
    devices: ClassVar[tuple[str, ...]] = ("cpu", "gpu", "tpu")
    auto_devices: ClassVar[tuple[str, ...]] = ("tpu", "gpu")
    load_hint: ClassVar[str | None] = "Check that the folder holds a complete SavedModel."

    @classmethod
    def version(cls) -> str | None:
        return version_of("tensorflow") or version_of("tensorflow-cpu")

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
        if not available("tensorflow"):
            return False, "TensorFlow is not installed: pip install 'edgekit[convert]'  (or: pip install tensorflow)"
        if device == "gpu" and not _tf().config.list_physical_devices("GPU"):
            return False, f"TensorFlow sees no GPU here. {GPU_HINT}"
        if device == "tpu" and not tpu_signals():
            return False, ("no Cloud TPU here (no TPU_NAME/COLAB_TPU_ADDR, no /dev/accel*, no libtpu). " + TPU_HINT)
        return True, ""

    @classmethod
    def device_hint(cls, device: str) -> str | None:
        return TPU_HINT if device == "tpu" else GPU_HINT

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        tf = _tf()
        self._tf = tf
        if threads:
            try:
                tf.config.threading.set_intra_op_parallelism_threads(int(threads))
                tf.config.threading.set_inter_op_parallelism_threads(1)
            except RuntimeError:  # TF's runtime already started in this process: the pools are fixed
                self.threads = None
        self._strategy = self._tpu_strategy(tf, options.get("tpu", "")) if device == "tpu" else None
        self._tf_device = {"cpu": "/CPU:0", "gpu": "/GPU:0"}.get(device)
        sig_name = str(options.get("signature", "serving_default"))
        if self._strategy is not None:
            with self._strategy.scope():
                loaded = tf.saved_model.load(
                    str(path), options=tf.saved_model.LoadOptions(experimental_io_device="/job:localhost"))
        else:
            with tf.device(self._tf_device):
                loaded = tf.saved_model.load(str(path))
        if sig_name not in loaded.signatures:
            raise UsageError(f"The SavedModel {path} has no signature '{sig_name}'.",
                             hint=f"Available signatures: {', '.join(loaded.signatures) or '(none)'}.")
        self._loaded = loaded
        self._fn = loaded.signatures[sig_name]
        self.signature = sig_name
        specs = self._fn.structured_input_signature[1]
        self.inputs = [TensorSpec(name=k, shape=[-1 if d is None else int(d) for d in v.shape],
                                  dtype=v.dtype.name, layout="NHWC" if len(v.shape) == 4 else None)
                       for k, v in sorted(specs.items())]
        outs = self._fn.structured_outputs
        self.outputs = [TensorSpec(name=k, shape=[-1 if d is None else int(d) for d in v.shape], dtype=v.dtype.name)
                        for k, v in sorted(outs.items())]

    @staticmethod
    def _tpu_strategy(tf: Any, tpu: str) -> Any:
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or os.environ.get("TPU_NAME", ""))
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
            return tf.distribute.TPUStrategy(resolver)
        except (ValueError, RuntimeError, tf.errors.OpError) as exc:
            raise NotAvailable(f"No Cloud TPU could be reached: {vendor_message(exc, 300)}", hint=TPU_HINT) from exc

    def _tensors(self, inputs: dict[str, np.ndarray]) -> dict[str, Any]:
        tf = self._tf
        out = {}
        for spec in self.inputs:
            x = input_array(inputs, spec, self.inputs)
            if self._tf_device:
                with tf.device(self._tf_device):
                    out[spec.name] = tf.identity(tf.constant(x))
            else:
                out[spec.name] = tf.constant(x)
        return out

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        values = self.bind(inputs)()
        return dict(zip([s.name for s in self.outputs], values, strict=True))

    def bind(self, inputs: dict[str, np.ndarray]) -> Callable[[], list[np.ndarray]]:
        """Inputs become device tensors once; per call: the signature function and outputs to numpy."""
        tensors = self._tensors(inputs)
        names = [s.name for s in self.outputs]
        fn = self._fn
        if self._strategy is not None:
            strategy = self._strategy
            fn = self._tf.function(lambda **kw: strategy.run(self._fn, kwargs=kw))
            names_fn = fn

            def call() -> list[np.ndarray]:
                out = names_fn(**tensors)
                return [np.asarray(strategy.experimental_local_results(out[n])[0]) for n in names]

            return call

        def call_local() -> list[np.ndarray]:
            out = fn(**tensors)
            return [out[n].numpy() for n in names]

        return call_local

    def arena_bytes(self) -> int | None:
        if self.device == "gpu":
            try:
                return int(self._tf.config.experimental.get_memory_info("GPU:0")["peak"])
            except (ValueError, KeyError):
                return None
        return None

    def info(self) -> dict[str, Any]:
        return {"signature": self.signature, "tf_device": self._tf_device or "tpu",
                "intra_op_threads": self.threads}

    def close(self) -> None:
        self._fn = self._loaded = None
