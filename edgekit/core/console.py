"""Where output goes: results to stdout, progress and logs to stderr (so `--json` stays clean)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

# Tables are wide; when output goes to a file or a CI log (no terminal to measure) use 160 columns, not 80.
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 160)
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)


def progress(message: str) -> None:
    """One progress line on stderr (the message as it is: "[calibration: 200 of 300]" is text, not markup)."""
    err.print(f"[dim]>[/dim] {escape(message)}")


def warn(message: str) -> None:
    err.print(f"[bold yellow]warning:[/bold yellow] {escape(message)}")


def print_json(obj: Any) -> None:
    """The machine-readable result alone on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    sys.stdout.flush()


def human_bytes(n: float | int | None) -> str:
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


class quiet_stdout:  # noqa: N801 - used as a context manager like contextlib's
    """Send everything written to stdout (Python and C level) to stderr for the duration.

    Converters print progress on stdout (torch.onnx, onnx2tf, TF's C++ logging); with --json,
    stdout must hold the JSON alone.
    """

    def __enter__(self) -> quiet_stdout:
        import os

        sys.stdout.flush()
        self._saved_fd = os.dup(1)
        os.dup2(2, 1)
        self._saved_py = sys.stdout
        sys.stdout = sys.stderr
        return self

    def __exit__(self, *exc: object) -> None:
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self._saved_fd, 1)
        os.close(self._saved_fd)
        sys.stdout = self._saved_py


class captured_output:  # noqa: N801 - a context manager
    """Capture everything written to fd 1 and 2 (C++ logs of TF/LiteRT/onnxruntime and Python prints).

    Converters talk a lot on the terminal ("fully_quantize: 0 ...", absl pre-init warnings, XNNPACK
    notices); a step's own chatter is kept and shown only when the step fails or EDGEKIT_DEBUG is set.
    """

    def __enter__(self) -> captured_output:
        import os
        import tempfile

        from edgekit.core.vendorlog import verbose

        self.debug = verbose()  # EDGEKIT_DEBUG=1 or --verbose: the converters talk on the terminal
        self.text = ""
        if self.debug:
            return self
        sys.stdout.flush()
        sys.stderr.flush()
        self._tmp = tempfile.TemporaryFile(mode="w+b")
        self._saved = (os.dup(1), os.dup(2))
        os.dup2(self._tmp.fileno(), 1)
        os.dup2(self._tmp.fileno(), 2)
        # Python-level writers too: a live display (rich's, while edgekit shows progress) puts a proxy in sys.stdout
        # that draws on the terminal later, past the descriptors (NNCF's progress bars came out that way)
        self._saved_py = (sys.stdout, sys.stderr)
        if sys.__stdout__ is not None and sys.__stderr__ is not None:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        self._held_py = (sys.stdout, sys.stderr)
        self._holding = True
        return self

    def shown(self, say: Callable[[str], None]) -> Callable[[str], None]:
        """SAY, given the terminal back for each line it writes: a long step's own progress (the int8 search's
        candidates) is seen as it happens, while the converters' chatter around it stays captured."""

        def show(message: str) -> None:
            if not getattr(self, "_holding", False):
                say(message)
                return
            import os

            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(self._saved[0], 1)
            os.dup2(self._saved[1], 2)
            sys.stdout, sys.stderr = self._saved_py
            try:
                say(message)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(self._tmp.fileno(), 1)
                os.dup2(self._tmp.fileno(), 2)
                sys.stdout, sys.stderr = self._held_py

        return show

    def __exit__(self, *exc: object) -> None:
        import os

        if self.debug:
            return
        self._holding = False
        sys.stdout.flush()
        sys.stderr.flush()
        sys.stdout, sys.stderr = self._saved_py
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in self._saved:
            os.close(fd)
        self._tmp.seek(0)
        self.text = self._tmp.read().decode("utf-8", "replace")
        self._tmp.close()

    def tail(self, lines: int = 12) -> str:
        from edgekit.core.vendorlog import is_vendor_log

        keep = [ln for ln in self.text.splitlines() if ln.strip() and not is_vendor_log(ln)]
        return "\n".join(keep[-lines:])
