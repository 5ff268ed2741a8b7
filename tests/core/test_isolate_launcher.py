"""run_isolated with a launcher (edgekit.emulate's seam), exercised without qemu: a shell that runs the child as the
emulated runs do (not exec'd, so it exits 128+N for a child dead of signal N), over the host's python."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgekit.core.errors import RuntimeFailure
from edgekit.core.isolate import run_isolated
from edgekit.core.records import Record
from edgekit.core.sigill import report_line
from edgekit.emulate.launch import exit_signal


@dataclass(frozen=True)
class Ask(Record):
    crash: bool = False


def child(request: Ask, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Doubles its input, or reports an LSE atomic and dies of SIGILL as the reporter lets a process die."""
    if request.crash:
        os.write(2, (report_line(0x5500A000, 0xB8E10000) + "\n").encode())
        os.kill(os.getpid(), signal.SIGILL)
    return {"where": os.environ.get("WHERE")}, {"y": arrays["x"] * 2}


class ShellLauncher:
    """Runs the child through `sh -c '"$@"; exit $?'` with the binds recorded: the Emulator's contract, on the host."""

    def __init__(self) -> None:
        self.binds: list[Path] = []
        self.entered = 0

    def argv(self, command: Sequence[str], binds: Sequence[Path] = (), env: dict[str, str] | None = None
             ) -> list[str]:
        self.binds = list(binds)
        assignments = [f"{k}={v}" for k, v in {**(env or {}), "WHERE": "launched",
                                                  "PYTHONPATH": os.pathsep.join(sys.path)}.items()]
        return ["sh", "-c", '"$@"; exit $?', "sh", "env", *assignments, sys.executable, *command[1:]]

    @contextlib.contextmanager
    def mountpoints(self, binds: Sequence[Path]) -> Iterator[None]:
        self.entered += 1
        yield

    def exit_signal(self, returncode: int) -> int | None:
        return exit_signal(returncode)


def test_the_child_runs_where_the_launcher_puts_it(tmp_path: Path) -> None:
    launcher = ShellLauncher()
    answer, arrays = run_isolated(f"{__name__}:child", Ask(), {"x": np.arange(3.0)}, who="the runtime", doing="it",
                                  launcher=launcher, binds=[tmp_path])
    assert answer == {"where": "launched"} and arrays["y"].tolist() == [0.0, 2.0, 4.0]
    assert launcher.entered == 1 and tmp_path in launcher.binds  # the request's folder and the named ones


def test_a_launched_child_dead_of_sigill_is_named_by_its_instruction() -> None:
    with pytest.raises(RuntimeFailure) as err:
        run_isolated(f"{__name__}:child", Ask(crash=True), {"x": np.zeros(1)}, who="LiteRT", doing="validating m",
                     launcher=ShellLauncher())
    message = err.value.message
    assert "crashed (SIGILL)" in message  # the shell's 132 read back as the signal
    assert "an instruction this CPU does not have" in message and "LSE atomics (ARMv8.1-A)" in message
