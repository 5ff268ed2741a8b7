"""The Coral Edge TPU target: a full-integer int8 .tflite, pre-flighted, then compiled by edgetpu_compiler.

The int8 model is an artifact of its own (validated on the CPU); the compiled `<stem>_edgetpu.tflite`
is derived from it by the post-step, where a compiler is installed, and otherwise the run says how to
finish it on a machine that has one (exit 10).
"""

from __future__ import annotations

from types import MappingProxyType

from edgekit.targets.base import TargetSpec

TARGET = TargetSpec(
    name="edgetpu",
    help="Coral Edge TPU: int8 TFLite with uint8 I/O, compiled by edgetpu_compiler where it is installed",
    format="tflite",
    steps=("tflite_convert",),
    precisions=("int8",),
    fixed_precisions=("int8",),
    # Coral's convention; int8 I/O also compiles with current compilers (--io-dtype int8)
    io_defaults=MappingProxyType({"int8": "uint8"}),
    post_steps=("edgetpu_compile",),
    integer_only=True,
)
