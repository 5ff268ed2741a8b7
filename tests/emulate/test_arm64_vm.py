"""edgekit measuring INTO a full-system arm64 VM (bench/arm64_vm.py): qemu-system-aarch64 boots Debian's arm64
kernel and systemd, which start sshd and examples/raspberry-pi's edgekit-serve unit; this x86-64 host runs
`edgekit profile --remote` into it and asks the served model with tritonclient.

Opt-in: building the image (debootstrap under qemu-user) and booting it cost minutes that the suite's budget does
not have, so it skips unless EDGEKIT_ARM64_VM=1 (and where not root, or qemu-system-aarch64/debootstrap are
missing). Timings measured in the VM are emulated and are never asserted on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import arm64_vm  # noqa: E402

pytestmark = pytest.mark.slow


def _why_skip() -> str | None:
    if os.environ.get("EDGEKIT_ARM64_VM") != "1":
        return ("the arm64 VM test is opt-in: set EDGEKIT_ARM64_VM=1 (it builds a Debian arm64 image with "
                "debootstrap and boots it under qemu-system-aarch64: minutes)")
    return arm64_vm.why_not()


@pytest.fixture(scope="module")
def vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[arm64_vm.VM]:
    why = _why_skip()
    if why:
        pytest.skip(why)
    artifacts = arm64_vm.convert(tmp_path_factory.mktemp("arm64-vm") / "mnist_cnn")
    with arm64_vm.running(cpu="cortex-a72", artifacts=artifacts) as machine:
        yield machine


def _profile(vm: arm64_vm.VM, artifact: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "edgekit.cli", "profile", str(artifact), *vm.remote_args,
                        "--connect-timeout", "60", "--runs", "20", "--min-seconds", "0.2", "--json"],
                       capture_output=True, text=True, timeout=1800, check=False, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"edgekit profile --remote exited {p.returncode}: {p.stderr[-2000:]}"
    return json.loads(p.stdout)


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_profile_remote_measures_in_the_arm64_vm(vm: arm64_vm.VM, fmt: str) -> None:
    artifact = arm64_vm.pick(Path(vm.facts["artifacts"]), fmt, "int8")
    result = _profile(vm, artifact)
    assert result["device"]["remote"]["machine"] == "aarch64"
    assert result["device"]["machine"] == "aarch64"
    assert result["artifact"]["sha256"] == arm64_vm.sha256(artifact)
    assert result["latency_ms"]["p50"] > 0  # emulated: its value says nothing about a device


def test_serve_unit_answers_tritonclient(vm: arm64_vm.VM) -> None:
    ready, state = arm64_vm.serve_ready(vm)
    journal = "" if ready else vm.ssh("journalctl -u edgekit-serve --no-pager | tail -30").stdout
    assert ready, f"edgekit-serve is {state!r}, not ready; its journal:\n{journal}"
    assert vm.ssh("systemctl is-active edgekit-serve").stdout.strip() == "active"
    right, answers = arm64_vm.ask(vm)
    assert right >= 8, f"{right}/10 digits right: {answers}"
