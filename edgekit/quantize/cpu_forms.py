"""The int8 form each deployment CPU class gets (`convert --for`): one table, a row per class with its reason.

Which ONNX int8 form runs fast and exact depends on the CPU that runs it, not the one converting:
- onnxruntime's quantization guide ("Data type selection", docs/performance/model-optimizations/quantization.md):
  S8S8 in QDQ is the default and first choice; on x86-64 with AVX2/AVX-512, U8S8 runs on VPMADDUBSW, which can
  saturate its 16-bit sums: there `reduce_range` (7-bit weights) or U8U8 avoids it; "there is no such issue on
  other CPU architectures (x64 with VNNI and ARM)";
- onnxruntime's graph optimizer keeps int8 *activations* in its fused QLinear kernels only on Arm
  (`QDQIsInt8Allowed()` in core/optimizer/qdq_transformer/selectors_actions/qdq_selector_action_transformer.h is
  true only for MLAS_TARGET_ARM_ANY); uint8 activations with int8 weights (U8S8) fuse on every CPU.
Measured on this project's x86 (docs/results/int8-forms.md, `python bench/int8_forms.py`): where the measurement and
the guidance disagree for a class, the row follows the measurement and its reason says so (x86-64-vnni: S8S8, the
guide's first choice, left a MobileNetV2's depthwise Convs and its Adds in float there and ran 1.7x slower).

TFLite and OpenVINO do not change with the CPU here; each row says what they assume (`tflite`, `openvino`).
Which class a CPU is (its ISA and /proc/cpuinfo features) is `cpu_class`; resolving `--for NAME` (a device profile
or `host`) to those facts is edgekit.measure.deploy_cpu's job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# /proc/cpuinfo flags that give x86 the VNNI instruction (VPDPBUSD: u8 x s8 summed straight into 32 bits)
VNNI_FLAGS = ("avx512_vnni", "avx_vnni")
ARM_DOT = "asimddp"  # Armv8.2's SDOT/UDOT (Cortex-A76, the Pi 5; not the Pi 3's A53 or the Pi 4's A72)

_TFLITE = ("int8 activations (asymmetric), int8 symmetric per-channel weights: the TFLite int8 spec, one form for "
           "every CPU; XNNPACK picks its kernels at run time")
_OPENVINO = ("NNCF's own int8 (u8/i8 activations by its placement, i8 symmetric per-channel weights); the OpenVINO "
             "CPU plugin picks its kernels at run time")


@dataclass(frozen=True)
class CpuForm:
    """One row: a CPU class and the ONNX int8 form made for it, with why; what TFLite and OpenVINO assume there."""

    cpu: str  # the class: x86-64-vnni | x86-64 | arm64-dotprod | arm64 | other
    activations: str  # uint8 | int8: the activations' type (the weights are int8 in every row)
    reduce_range: bool  # 7-bit weights
    per_channel: bool
    reason: str
    tflite: str = _TFLITE
    openvino: str = _OPENVINO

    @property
    def label(self) -> str:
        """"U8S8, 8-bit weights, per channel": how logs and tables name the form."""
        act = "U8" if self.activations == "uint8" else "S8"
        bits = "7-bit weights (reduce_range)" if self.reduce_range else "8-bit weights"
        return f"{act}S8, {bits}, {'per channel' if self.per_channel else 'per tensor'}"

    def to_dict(self) -> dict[str, Any]:
        return {"cpu": self.cpu, "onnx": {"form": self.label, "activations": self.activations, "weights": "int8",
                                          "reduce_range": self.reduce_range, "per_channel": self.per_channel,
                                          "reason": self.reason},
                "tflite": self.tflite, "openvino": self.openvino}


_GUIDE = "onnxruntime's quantization guide, 'Data type selection'"
FORMS: dict[str, CpuForm] = {f.cpu: f for f in (
    CpuForm("x86-64-vnni", "uint8", False, True,
            f"x86-64 with VNNI: U8S8, not the S8S8 {_GUIDE} puts first, because measured here (onnxruntime "
            "1.32, Xeon with AVX-512 VNNI, MobileNetV2 224 at 1 thread) S8S8 kept 15 Convs and every Add in float "
            "(77 DequantizeLinear left after fusion) and ran 6.7 ms against U8S8's 3.8 ms, fp32's 7.1 and LiteRT "
            "int8's 4.0, at the same fidelity; onnxruntime keeps int8 activations fused only on Arm "
            "(QDQIsInt8Allowed), and forcing it on x86 (session.qdqisint8allowed) ran 35 ms. VNNI's VPDPBUSD sums "
            f"u8 x s8 in 32 bits ({_GUIDE}: no saturation on x64 with VNNI), so full 8-bit weights: 7-bit ran no "
            "faster (docs/results/int8-forms.md)"),
    CpuForm("x86-64", "uint8", True, True,
            "x86-64 without VNNI (AVX2/AVX-512): uint8 activations, which onnxruntime fuses on x86 (measured with "
            f"VNNI: S8S8 left Convs in float), but VPMADDUBSW sums two u8 x s8 products in 16 bits and can saturate "
            f"({_GUIDE}: use reduce_range), so 7-bit weights; the speed is guidance only: no such CPU here"),
    CpuForm("arm64-dotprod", "int8", False, True,
            f"Arm64 with the dot product (Armv8.2+: the Pi 5's Cortex-A76): S8S8 in QDQ ({_GUIDE}: the default and "
            "first choice; no saturation on Arm), fused on Arm (QDQIsInt8Allowed), SDOT multiplies s8 by s8; full "
            "8-bit weights. Checked to run and agree under qemu, not timed"),
    CpuForm("arm64", "int8", False, True,
            f"Arm64 without the dot product (Armv8.0: the Pi 3's Cortex-A53, the Pi 4's A72): S8S8 in QDQ ({_GUIDE}:"
            " the default; no saturation on Arm), fused on Arm (QDQIsInt8Allowed); full 8-bit weights. Checked to run "
            "and agree under qemu, not timed"),
    CpuForm("other", "int8", False, True,
            f"a CPU neither x86-64 nor Arm64 (edgekit has no device for it): onnxruntime's default S8S8 ({_GUIDE}), "
            "8-bit weights: the saturation reduce_range avoids is x86's"),
)}


def cpu_class(machine: str, features: set[str] | frozenset[str] | tuple[str, ...]) -> str:
    """The class of a CPU from its architecture (uname's machine) and its /proc/cpuinfo flags or features."""
    arch = machine.strip().lower()
    found = set(features)
    if arch in ("x86_64", "amd64", "x86-64"):
        return "x86-64-vnni" if found & set(VNNI_FLAGS) else "x86-64"
    if arch in ("aarch64", "arm64"):
        return "arm64-dotprod" if ARM_DOT in found else "arm64"
    return "other"


def form_for(cpu: str) -> CpuForm:
    """The row of the class CPU (one of FORMS' keys: cpu_class gives it)."""
    return FORMS[cpu]


def read_cpuinfo(text: str) -> tuple[str, tuple[str, ...]]:
    """(machine, features) from /proc/cpuinfo's text: x86's "flags" line, Arm64's "Features" line; ("", ()) when
    it has neither (another architecture, or no /proc)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    if "flags" in fields:
        return "x86_64", tuple(fields["flags"].split())
    if "Features" in fields:
        return "aarch64", tuple(fields["Features"].split())
    return "", ()


__all__ = ["FORMS", "VNNI_FLAGS", "CpuForm", "cpu_class", "form_for", "read_cpuinfo"]
