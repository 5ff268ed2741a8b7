"""Vendor log lines kept off the user's terminal by default; shown with `--verbose` or EDGEKIT_DEBUG=1.

TensorFlow prints its C++ start-up lines ("WARNING: All log messages before absl::InitializeLog()",
"I0000 ... cudart_stub.cc:31] Could not find cuda drivers", "E0000 ... failed call to cuInit") before
absl's log level is read, so TF_CPP_MIN_LOG_LEVEL cannot stop them; LiteRT announces its delegate
("INFO: Created TensorFlow Lite XNNPACK delegate"), and Python loggers of TF/absl add "WARNING:tensorflow:..."
lines. Around edgekit's own progress lines they read as errors. `quiet_vendor_logs()` (the CLI calls it
before anything heavy is imported) filters them out of both streams that reach the terminal:
- file descriptor 2 (C/C++ code, child processes that inherit it) goes through a tiny filter process
  (a separate process, not a thread: a C call that holds the GIL while writing a full pipe cannot
  then stall the reader);
- Python's sys.stderr is wrapped by a line filter over the real stream (so rich still sees a terminal).
Only lines that match VENDOR_LOG are dropped; everything else, edgekit's errors included, passes as is.
`is_vendor_log` / `strip_vendor_log` serve the places that show a captured vendor output (a failed
step's last lines, a crashed child's stderr).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import subprocess
import sys
import warnings
from typing import Any

VENDOR_LOG = re.compile(
    r"^\s*(?:"
    r"[IWE]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w./-]+:\d+\]"  # absl / glog C++ lines (F = fatal is kept)
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWE] [\w./-]+:\d+\]"  # TensorFlow's older C++ log format
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|INFO: Created TensorFlow Lite .*delegate"
    r"|To enable the following instructions: .*rebuild TensorFlow"
    r"|(?:WARNING|INFO|DEBUG):(?:tensorflow|absl|tf2onnx|onnx2tf|h5py)[:.]"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[[IWV]:onnxruntime"
    r")"
)
# Python loggers of the vendors: their WARNING/INFO chatter is about their internals
_LOGGERS = ("tensorflow", "absl", "tf2onnx", "onnx2tf", "h5py", "onnxruntime", "jax")
_WARNING_MODULES = (r"(keras|tf_keras|tensorflow|tf2onnx|onnx2tf|onnx|onnxruntime|onnxscript|torch|google|absl|h5py)"
                    r"(\.|$)")

# The filter ignores SIGINT/SIGTERM: a Ctrl-C reaches the whole process group, and a filter that died
# with it would swallow edgekit's own "interrupted" line; it ends when its input closes (edgekit exits).
_FILTER_CODE = (
    "import re,signal,sys\n"
    "signal.signal(signal.SIGINT,signal.SIG_IGN);signal.signal(signal.SIGTERM,signal.SIG_IGN)\n"
    "p=re.compile(sys.argv[1])\n"
    "o=sys.stdout.buffer\n"
    "for b in sys.stdin.buffer:\n"
    "    if not p.search(b.decode('utf-8','replace')):\n"
    "        o.write(b);o.flush()\n"
)


def is_vendor_log(line: str) -> bool:
    """True for a line of vendor logging (absl/glog, TF/LiteRT banners, vendor Python loggers)."""
    return bool(VENDOR_LOG.search(line))


def strip_vendor_log(text: str) -> str:
    """TEXT without its vendor log lines."""
    return "\n".join(ln for ln in text.splitlines() if not is_vendor_log(ln))


def verbose() -> bool:
    """True where the user asked to see everything (EDGEKIT_DEBUG=1 or EDGEKIT_VERBOSE=1, set by --verbose)."""
    return bool(os.environ.get("EDGEKIT_DEBUG") or os.environ.get("EDGEKIT_VERBOSE"))


class _LineFilter(io.TextIOBase):
    """A text stream that passes whole lines to STREAM unless they are vendor log lines."""

    def __init__(self, stream: Any) -> None:
        self.stream, self._part = stream, ""

    def write(self, s: str) -> int:
        self._part += s
        *lines, self._part = self._part.split("\n")
        kept = [ln + "\n" for ln in lines if not is_vendor_log(ln)]
        if kept:
            self.stream.write("".join(kept))
        return len(s)

    def flush(self) -> None:
        if self._part and not is_vendor_log(self._part):
            self.stream.write(self._part)
            self._part = ""
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(self.stream.isatty())

    def fileno(self) -> int:
        return int(self.stream.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]  # read-only: io's C base has no setter; typeshed says attribute
        return str(getattr(self.stream, "encoding", "utf-8"))


class _Quiet:
    """What `quiet_vendor_logs` changed, to undo it (`release`)."""

    def __init__(self) -> None:
        self.saved_fd: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.py_stderr: Any = None
        self.filtered: Any = None
        self.levels: dict[str, int] = {}

    def release(self) -> None:
        """Back to the real stderr, everything shown; the filter process ends once its input closes."""
        if self.py_stderr is not None:
            sys.stderr.flush()
            sys.stderr = self.py_stderr
            self.py_stderr = None
            self.filtered.stream.close()
        if self.saved_fd is not None:
            os.dup2(self.saved_fd, 2)
            os.close(self.saved_fd)
            self.saved_fd = None
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            # a grandchild that still holds the pipe: the filter ends with it
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
            self.proc = None
        for name, level in self.levels.items():
            logging.getLogger(name).setLevel(level)
        self.levels = {}


_STATE = _Quiet()


def quiet_vendor_logs() -> None:
    """Filter vendor log lines out of stderr (fd 2 and sys.stderr) and lower vendor loggers to ERROR.

    Does nothing when `verbose()`; `release_vendor_logs()` undoes it (the CLI's --verbose, and at exit).
    """
    if verbose() or _STATE.saved_fd is not None:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        _STATE.levels[name] = logger.level
        logger.setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module=_WARNING_MODULES)
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _FILTER_CODE, VENDOR_LOG.pattern],
                                stdin=subprocess.PIPE, stdout=saved, stderr=subprocess.DEVNULL, close_fds=True)
    except (OSError, ValueError):  # no fd 2 (a daemon), or no way to start the filter: leave stderr as it is
        return
    assert proc.stdin is not None
    os.dup2(proc.stdin.fileno(), 2)
    _STATE.saved_fd, _STATE.proc = saved, proc
    _STATE.py_stderr = sys.stderr
    _STATE.filtered = sys.stderr = _LineFilter(os.fdopen(os.dup(saved), "w", buffering=1, encoding="utf-8",
                                                         errors="replace", closefd=True))


def release_vendor_logs() -> None:
    """Undo `quiet_vendor_logs` (safe to call when it did nothing)."""
    _STATE.release()


__all__ = ["VENDOR_LOG", "is_vendor_log", "quiet_vendor_logs", "release_vendor_logs", "strip_vendor_log",
           "verbose"]
