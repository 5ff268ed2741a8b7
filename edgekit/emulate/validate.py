"""`edgekit convert --validate-on pi5`: each artifact's validation run again on an emulated Pi core.

The artifact is run by the aarch64 runtimes (the same wheels a Pi installs) under qemu emulating that
generation's core, on the same held-out inputs, and judged by the same measures against the source: the
verdict the device would give (a Pi 5's fp16 arithmetic and dot-product kernels, a Pi 4's lack of LSE
atomics). The record sits in the artifact's `extra.validated_on[<device>]`, with how far the device's
outputs are from this host's run of the same file; a miss or a crash there fails the artifact's fidelity,
named by the device. Timings under emulation are not device figures and none is recorded as one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core.artifact import Artifact
from edgekit.core.errors import RuntimeFailure
from edgekit.emulate.cpus import EmulatedCpu

EMULATOR = "qemu-user (binfmt_misc, qemu-aarch64-static)"


def output_difference(host: dict[str, np.ndarray], device: dict[str, np.ndarray]) -> dict[str, dict[str, Any]]:
    """Per output, how the device's outputs differ from the host's for the same inputs: identical, cosine, max abs."""
    out: dict[str, dict[str, Any]] = {}
    for name, a in host.items():
        b = device.get(name)
        if b is None or np.shape(a) != np.shape(b):
            out[name] = {"identical": False, "note": "missing or of another shape on the device"}
            continue
        a64, b64 = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
        na, nb = float(np.linalg.norm(a64)), float(np.linalg.norm(b64))
        cosine = float(a64 @ b64 / (na * nb)) if na and nb else (1.0 if na == nb else 0.0)
        diff = np.abs(a64 - b64)
        out[name] = {"identical": bool(np.array_equal(a, b)), "cosine": round(cosine, 8),
                     "max_abs_difference": float(diff.max()) if diff.size else 0.0,
                     "relative_difference": float(np.linalg.norm(a64 - b64) / na) if na else 0.0}
    return out


def validate_on(art: Artifact, path: Path, layout: str, ref: Any, host_outputs: dict[str, np.ndarray],
                cpus: list[EmulatedCpu], progress: Callable[[str], None]) -> None:
    """Validate ART (the file at PATH) on each of CPUS; record it in art.extra and fail its fidelity on a miss."""
    from edgekit.emulate.launch import Emulator
    from edgekit.validation.artifact import check_artifact

    records: dict[str, Any] = {}
    failures: list[str] = []
    for cpu in cpus:
        progress(f"validating {path.name} on {cpu.label} ...")
        t0 = time.perf_counter()
        record: dict[str, Any] = {"cpu": cpu.to_dict(), "emulator": EMULATOR}
        try:
            check = check_artifact(path, art.format, layout, art.precision, ref, on=Emulator(cpu))
        except RuntimeFailure as exc:
            record.update(ran=False, error=exc.message, hint=exc.hint)
            failures.append(f"on {cpu.label}: {exc.message}")
        else:
            fid = check.fidelity
            record.update(ran=True, passed=bool(fid.passed), fidelity=fid.to_dict(), kernels=check.kernels,
                          vs_host=output_difference(host_outputs, check.outputs_got))
            if check.notes:
                record["notes"] = list(check.notes)
            failures.extend(f"on {cpu.label}: {f}" for f in fid.failures)
        record["seconds"] = round(time.perf_counter() - t0, 3)  # emulated: the cost of the check, not a latency
        records[cpu.device] = record
        progress(f"{path.name} on {cpu.label}: " + ("could not run" if not record["ran"] else
                                                    "pass" if record["passed"] else "FAIL"))
    art.extra["validated_on"] = records
    if failures and art.fidelity is not None:
        art.fidelity.failures = [*art.fidelity.failures, *failures]
        art.fidelity.passed = False


def prepare(names: list[str]) -> list[EmulatedCpu]:
    """The cores NAMES ask for, with a clear error now (before any conversion) where they cannot be emulated here."""
    from edgekit.emulate.cpus import emulated_cpus
    from edgekit.emulate.launch import Emulator

    cpus = emulated_cpus(names)
    for cpu in cpus[:1]:
        Emulator(cpu).check()  # the userland and binfmt_misc are the same for every core
    return cpus


__all__ = ["EMULATOR", "output_difference", "prepare", "validate_on"]
