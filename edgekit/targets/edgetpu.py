"""The Coral Edge TPU target: a full-integer int8 .tflite, pre-flighted, then compiled by edgetpu_compiler.

The int8 model is an artifact of its own (validated on the CPU); the compiled `<stem>_edgetpu.tflite`
is derived from it by the post-step, where a compiler is installed, and otherwise the run says how to
finish it on a machine that has one (exit 10).

The compiler's options are declared here, with the target (EdgeTpuOptions): ConvertOptions, `edgekit
convert --help` and the Python API gather them from the target table, and the steps read them as
`options.edgetpu_*`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from edgekit.core import flags
from edgekit.core.errors import UsageError
from edgekit.core.option_field import option
from edgekit.targets.base import TargetSpec


@dataclass
class EdgeTpuOptions:
    """What the Edge TPU compiler is told (its -m and timeout) and which graph fixes run before quantizing."""

    edgetpu_compiler: str | None = option(None, "Path of edgetpu_compiler (default: found on PATH).")
    # the flag `edgekit inspect` takes too; checked again by the edgetpu_compile step for a value the API gave as is
    edgetpu_min_runtime: int | None = flags.EDGETPU_MIN_RUNTIME()
    edgetpu_timeout: float = option(180.0, "Seconds before the Edge TPU compiler is stopped.")
    edgetpu_fixes: bool = option(True, "Edge TPU: rewrite ops the compiler cannot map (HARD_SWISH, a TRANSPOSE "
                                 "before FULLY_CONNECTED, PADV2 after ReLU) into ones it can, before quantizing.")

    def check(self) -> None:
        """Range checks, run with ConvertOptions.check before the model is loaded."""
        self.edgetpu_min_runtime = flags.edgetpu_runtime(self.edgetpu_min_runtime)  # "14" from the API: 14
        if self.edgetpu_timeout <= 0:
            raise UsageError(f"--edgetpu-timeout must be above 0 seconds, got {self.edgetpu_timeout:g}.")


TARGET = TargetSpec(
    name="edgetpu",
    help="Coral Edge TPU: int8 TFLite with uint8 I/O, compiled by edgetpu_compiler where it is installed",
    format="tflite",
    steps=("tflite_convert",),
    precisions=("int8",),
    fixed_precisions=("int8",),
    refused=MappingProxyType({"w8a16": "the Edge TPU runs 8-bit integer tensors only: its compiler maps no op with "
                                       "16-bit activations, so a w8a16 model would run wholly on the host CPU"}),
    # Coral's convention; int8 I/O also compiles with current compilers (--io-dtype int8)
    io_defaults=MappingProxyType({"int8": "uint8"}),
    post_steps=("edgetpu_compile",),
    integer_only=True,
    options=EdgeTpuOptions,
    int8_recipes="edgekit.quantize.onnx.search:NAMES",  # TFLite notes the ONNX-only ones and uses auto's order
)
