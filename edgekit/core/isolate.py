"""Run one function in a child process, so a native crash in it cannot take the caller down.

Native runtimes (LiteRT's builtin kernels, XNNPACK, onnxruntime) abort or segfault on some malformed
or badly quantized models instead of raising. `run_isolated("module:function", request, arrays)`
runs the function in `python -m edgekit.core.isolate FOLDER` (a fresh interpreter: never a fork of a
process that has TensorFlow or torch loaded) and brings back what it returned:
- the request is a typed record (an edgekit.core.records.Record dataclass declared beside the child function),
  never a hand-made dict: it is written here, in one place, as its class ("module:Class") and its fields,
  and the child rebuilds it with that class's from_dict, so the function receives the record it was sent
  and a misspelt or missing key is a TypeError at the call, not a KeyError in another process;
- the request and the answer travel as JSON, numpy arrays as .npy files in a temporary folder
  (no pickles of vendor objects either way);
- an EdgekitError raised in the child is raised again in the parent as the same class, message,
  hint, step and op; any other exception is a bug in edgekit (InternalError);
- a child killed by a signal, one that exits without an answer and one that runs past its timeout
  become RuntimeFailure naming what crashed, the signal, and the child's last lines on stderr.
The child imports only edgekit's light modules and the function's own imports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from edgekit.core import errors
from edgekit.core.errors import EdgekitError, RuntimeFailure
from edgekit.core.records import Record

TIMEOUT_S = 600.0
STDERR_LINES = 5
# a child function: (its request record, the arrays) -> (a JSON-ready answer, arrays)
ChildFunction = Callable[[Any, dict[str, np.ndarray]], tuple[dict[str, Any], dict[str, np.ndarray]]]


class Launcher(Protocol):
    """Runs the child somewhere else than this interpreter: under an emulated CPU (edgekit.emulate.launch.Emulator).

    `argv` is the host command line that runs COMMAND there with BINDS (host folders) at their own paths and
    ENV as its whole environment; `mountpoints` prepares those paths for the run and tidies them after it.
    """

    def argv(self, command: Sequence[str], binds: Sequence[Path] = (), env: dict[str, str] | None = None
             ) -> list[str]: ...

    def mountpoints(self, binds: Sequence[Path]) -> Any: ...

    def exit_signal(self, returncode: int) -> int | None: ...


def isolation_enabled() -> bool:
    """False where the user set EDGEKIT_NO_ISOLATION=1 (files they trust: save the child's start-up)."""
    return not os.environ.get("EDGEKIT_NO_ISOLATION")


def run_isolated(target: str, request: Record, arrays: dict[str, np.ndarray] | None = None, *,
                 who: str, doing: str, hint: str | Callable[[str], str | None] | None = None,
                 timeout: float = TIMEOUT_S, launcher: Launcher | None = None, binds: Sequence[Path] = ()
                 ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Call TARGET ("module:function") with (REQUEST, ARRAYS) in a child process; its (answer, arrays).

    REQUEST is a Record dataclass instance the child can import by its class (a plain dict is a TypeError).
    WHO and DOING word the error when the child dies: "<WHO> crashed (SIGABRT) while <DOING>: <stderr>";
    HINT is its hint, or a function of the child's stderr that picks the hint fitting the cause.
    LAUNCHER runs the child elsewhere (an emulated Arm CPU), with the request's folder and BINDS (the folders
    the request names, by absolute path) visible there at the same paths.
    """
    with tempfile.TemporaryDirectory(prefix="edgekit-isolate-") as tmp:
        folder = Path(tmp)
        (folder / "request.json").write_text(json.dumps(request_message(target, request)))
        for name, arr in (arrays or {}).items():
            np.save(folder / f"in.{name}.npy", np.asarray(arr), allow_pickle=False)
        # the child imports what this process can (a runtime registered from a test folder, a plugin)
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "EDGEKIT_ISOLATED": "1",
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        argv = [sys.executable, "-m", "edgekit.core.isolate", str(folder)]
        mounts: Any = contextlib.nullcontext()
        if launcher is not None:
            mounts = launcher.mountpoints([folder, *binds])
            argv = launcher.argv(["python3", "-m", "edgekit.core.isolate", str(folder.resolve())], [folder, *binds],
                                 {"TF_CPP_MIN_LOG_LEVEL": "3", "EDGEKIT_ISOLATED": "1"})
        try:
            with mounts:
                child = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout,
                                       env=env, cwd=os.getcwd())
        except subprocess.TimeoutExpired as exc:
            raise RuntimeFailure(f"{who} did not finish within {timeout:.0f} s while {doing}.",
                                 hint=hint("") if callable(hint) else hint) from exc
        if launcher is not None:  # a launcher's shell exits 128+N where the child died of signal N
            died_of = launcher.exit_signal(child.returncode)
            if died_of is not None:
                child.returncode = -died_of
        if os.environ.get("EDGEKIT_DEBUG") and child.stderr:  # the child's log, as an in-process call shows it
            sys.stderr.write(child.stderr)
        answer_file = folder / "answer.json"
        if child.returncode != 0 or not answer_file.is_file():
            raise _died(child, who, doing, hint)
        answer = json.loads(answer_file.read_text())
        if not answer.get("ok"):
            raise _reraised(answer)
        out = {p.name[len("out."):-len(".npy")]: np.load(p, allow_pickle=False) for p in folder.glob("out.*.npy")}
        return answer["result"], out


def request_message(target: str, request: Record) -> dict[str, Any]:
    """The one serialization of a child's request: TARGET, the record's class as "module:Class", its fields.

    Only a Record dataclass at a module's top level passes: a dict would travel unchecked, and a class the
    child cannot import (one defined inside a function) could not be rebuilt there.
    """
    cls = type(request)
    if not (isinstance(request, Record) and dataclasses.is_dataclass(request)):
        raise TypeError(f"run_isolated({target!r}) takes a request record (an edgekit.core.records.Record dataclass), "
                        f"not a {cls.__name__}")
    if "<" in cls.__qualname__:
        raise TypeError(f"{cls.__qualname__} is not importable by the child: declare it at a module's top level")
    return {"target": target, "request_type": f"{cls.__module__}:{cls.__qualname__}", "request": request.to_dict()}


def rebuilt_request(message: dict[str, Any]) -> Record:
    """In the child: the record request_message wrote, rebuilt with its class's from_dict.

    from_dict drops a field whose value does not fit its declared type; for a request that is a bug in the
    caller (a numpy integer, a Path), so a record that does not come back whole is a TypeError, not a default.
    """
    from edgekit.core.registry import resolve

    cls: type[Record] = resolve({"request": message["request_type"]}, "request", "request type")
    record = cls.from_dict(message["request"])
    if record.to_dict() != message["request"]:
        raise TypeError(f"{cls.__name__} did not round-trip: sent {message['request']}, rebuilt {record.to_dict()}")
    return record


def stderr_tail(text: str, lines: int = STDERR_LINES) -> str:
    """The last LINES meaningful lines a child wrote (vendor log lines, LiteRT's banner among them, left out)."""
    from edgekit.core.vendorlog import is_vendor_log

    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip() and not is_vendor_log(ln)]
    return "\n".join(kept[-lines:])


def _died(child: subprocess.CompletedProcess[str], who: str, doing: str,
          hint: str | Callable[[str], str | None] | None) -> RuntimeFailure:
    tail = stderr_tail(child.stderr)
    hint = hint(child.stderr or "") if callable(hint) else hint
    if child.returncode < 0:
        try:
            how = f"crashed ({signal.Signals(-child.returncode).name})"
        except ValueError:
            how = f"crashed (signal {-child.returncode})"
    else:
        how = f"exited with status {child.returncode} without an answer"
    message = f"{who} {how} while {doing}" + (f": {tail}" if tail else ".")
    if child.returncode == -signal.SIGILL:
        from edgekit.core.sigill import MARK

        said = [ln.strip() for ln in (child.stderr or "").splitlines() if ln.startswith(MARK)]
        if said:  # the instruction, not qemu's or the shell's words about the signal
            message = f"{who} {how} while {doing}: an instruction this CPU does not have. {said[-1]}"
    extra = "edgekit ran it in a separate process, so nothing else was affected."
    cls = errors.RuntimeCrash if child.returncode < 0 else RuntimeFailure
    return cls(message, hint=f"{hint} ({extra})" if hint else extra)


def _reraised(answer: dict[str, Any]) -> EdgekitError:
    cls = getattr(errors, answer.get("error", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, EdgekitError)):
        cls = RuntimeFailure
    return cls(answer.get("message", "The child process failed."), hint=answer.get("hint"),
               step=answer.get("step"), op=answer.get("op"))


def _child(folder: Path) -> int:
    """In the child: run the target, write answer.json (and out.*.npy) into FOLDER."""
    from edgekit.core.registry import resolve
    from edgekit.core.sigill import report_on_sigill

    report_on_sigill()  # on aarch64: a crash on an instruction this core lacks is named with that instruction
    req = json.loads((folder / "request.json").read_text())
    arrays = {p.name[len("in."):-len(".npy")]: np.load(p, allow_pickle=False) for p in folder.glob("in.*.npy")}
    try:
        func: ChildFunction = resolve({"target": req["target"]}, "target", "function")
        result, out = func(rebuilt_request(req), arrays)
        for name, arr in out.items():
            np.save(folder / f"out.{name}.npy", np.asarray(arr), allow_pickle=False)
        answer: dict[str, Any] = {"ok": True, "result": result}
    except EdgekitError as exc:
        answer = _error(exc)
    except Exception as exc:  # runtimes map vendor errors at their border: what escapes is a bug in edgekit
        from edgekit.core.border import internal_error

        if os.environ.get("EDGEKIT_DEBUG"):
            import traceback

            traceback.print_exception(exc)
        answer = _error(internal_error(exc))
    tmp = folder / "answer.json.tmp"
    tmp.write_text(json.dumps(answer))
    os.replace(tmp, folder / "answer.json")  # a child that dies mid-write leaves no answer, never half of one
    return 0


def _error(exc: EdgekitError) -> dict[str, Any]:
    return {"ok": False, "error": type(exc).__name__, "message": exc.message, "hint": exc.hint, "step": exc.step,
            "op": exc.op}


if __name__ == "__main__":  # pragma: no cover - runs in the child
    raise SystemExit(_child(Path(sys.argv[1])))


__all__ = ["TIMEOUT_S", "isolation_enabled", "rebuilt_request", "request_message", "run_isolated", "stderr_tail"]
