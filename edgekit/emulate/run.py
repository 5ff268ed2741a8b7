"""`edgekit emulate run`: one edgekit command on an emulated core, its exit status (a crash named, with its signal)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

from edgekit.core.errors import RuntimeFailure, UsageError
from edgekit.emulate.cpus import emulated_cpu
from edgekit.emulate.launch import Emulator, exit_signal
from edgekit.emulate.userland import require


def binds_for(args: list[str], cwd: Path) -> list[Path]:
    """The folders a command's arguments name (an existing path's folder, or the path where it is one), and CWD."""
    out = [cwd]
    for a in args:
        value = a.split("=", 1)[1] if a.startswith("--") and "=" in a else a
        if not value or value.startswith("-"):
            continue
        p = Path(value)
        if p.exists():
            out.append(p.resolve() if p.is_dir() else p.resolve().parent)
    return out


def run_edgekit(on: str, args: list[str], root: Path | None = None) -> int:
    """`edgekit ARGS` on the core ON in the userland at ROOT; its exit status, or RuntimeFailure for a crash."""
    if not args:
        raise UsageError("Name the edgekit command to run: edgekit emulate run --on pi4 profile model.tflite.")
    cpu = emulated_cpu(on)
    emu = Emulator(cpu, require(root))
    emu.check()
    cwd = Path.cwd()
    binds = binds_for(args, cwd)
    with emu.mountpoints(binds):
        # its own process group: SIGTERM/SIGINT here go to the whole group (unshare ignores them; the namespace's
        # shell passes them to edgekit inside, so a served model drains as it would on the device)
        proc = subprocess.Popen(emu.argv(["python3", "-m", "edgekit.cli", *args], binds, cwd=cwd),
                                start_new_session=True)

        def forward(signum: int, _frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signum)

        previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            code = proc.wait()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    signum = exit_signal(code)
    if signum is not None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        raise RuntimeFailure(f"edgekit {args[0]} crashed ({name}) on {cpu.label}.",
                             hint=crash_hint(name, cpu.core))
    return code


def crash_hint(signal_name: str, core: str) -> str:
    """What a crash under emulation points at: SIGILL is an instruction the emulated core does not have."""
    if signal_name == "SIGILL":
        return (f"An illegal instruction: the runtime ran an instruction the {core} does not implement (LSE atomics, "
                "dot product or fp16 arithmetic on an ARMv8.0 core). The device would crash the same way: use another "
                "runtime there (docs/results/arm64.md lists what runs on each Pi).")
    return "Rerun with EDGEKIT_DEBUG=1 to see the command's own output."


__all__ = ["binds_for", "crash_hint", "run_edgekit"]
