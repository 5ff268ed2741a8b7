"""Load an untrusted model file in a child process first, so a crash cannot take the caller down.

Native readers of model files (TensorFlow's CHECK failures, h5py/HDF5, the ONNX checker,
TorchScript) can abort or segfault on a malformed file instead of raising. `probe()` runs the same
loader in a child process (`python -m edgekit.sources.probe`); a child killed by a signal becomes
an UnsupportedModel error in the parent, and an edgekit error in the child is re-raised as itself.
Only then does the caller load the file in its own process: `load_source` does both, and is how
edgekit loads a user's source. EDGEKIT_NO_ISOLATION=1 skips the probe (for files you trust, to save
the second load).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from edgekit.core import errors
from edgekit.core.errors import UnsupportedModel
from edgekit.sources import SOURCES, source_for_kind
from edgekit.sources.base import LoadOptions, Source, SourceSpec

PROBE_TIMEOUT_S = 600.0


def load_source(path: Path | None, kind: str, opts: LoadOptions) -> Source:
    """Load a source of KIND with its spec's loader: a file is probed in a child process first."""
    spec = source_for_kind(kind)
    if path is not None:
        probe(path, kind, opts)  # a malformed file may crash a native reader: not in this process
    return spec.load(path, opts, kind)


def _fingerprint(path: Path, kind: str, spec: SourceSpec, opts: LoadOptions) -> str:
    """Content hash of the file or folder, the load options and the reader's library versions."""
    import hashlib

    from edgekit.core._deps import version_of
    from edgekit.core.fsutil import sha256_path

    h = hashlib.sha256(f"{kind}|{spec.name}|{json.dumps(dataclasses.asdict(opts), sort_keys=True)}".encode())
    for dist in spec.dists:
        h.update(f"|{dist}={version_of(dist)}".encode())
    h.update(f"|{sha256_path(path)}".encode())
    return h.hexdigest()


def probe(path: Path, kind: str, opts: LoadOptions) -> None:
    """Load PATH with KIND's loader in a child process; raise what it raised, or UnsupportedModel if it died.

    A success is remembered (edgekit's cache folder, by content hash and library versions), so the
    second load is paid once per file, not on every conversion.
    """
    if os.environ.get("EDGEKIT_NO_ISOLATION"):
        return
    from edgekit.core.fsutil import atomic_write_text, cache_dir

    mark = cache_dir() / "probed" / _fingerprint(path, kind, source_for_kind(kind), opts)
    if mark.is_file():
        return
    _probe_in_child(path, kind, opts)
    with contextlib.suppress(OSError):  # a read-only home: the probe just runs again next time
        atomic_write_text(mark, f"{path}\n")


def _probe_in_child(path: Path, kind: str, opts: LoadOptions) -> None:
    spec = source_for_kind(kind)
    # the child finds the spec by its "module:attr" (a source registered at run time is not in its own SOURCES)
    request = json.dumps({"path": str(path), "kind": kind, "source": SOURCES[spec.name],
                          "opts": dataclasses.asdict(opts)})
    # the child imports what this process can (a --model factory's package, for one)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        child = subprocess.run([sys.executable, "-m", "edgekit.sources.probe", request], capture_output=True,
                               text=True, timeout=PROBE_TIMEOUT_S, env=env, cwd=os.getcwd())
    except subprocess.TimeoutExpired as exc:
        raise UnsupportedModel(
            f"Loading {path} did not finish within {PROBE_TIMEOUT_S:.0f} s.",
            hint="The file may be malformed; set EDGEKIT_NO_ISOLATION=1 to load it directly.",
        ) from exc
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        raise UnsupportedModel(
            f"Reading {path} crashed the {spec.name} loader ({name}): the file is malformed, or was written by an "
            "incompatible version. edgekit read it in a separate process, so nothing else was affected.",
            hint="Re-export the model with the framework version that trained it.",
        )
    lines = [ln for ln in child.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = "\n".join(child.stderr.strip().splitlines()[-5:])
        raise UnsupportedModel(f"Reading {path} failed in the {spec.name} loader (exit {child.returncode}).",
                               hint=tail or None)
    answer = json.loads(lines[-1])
    if answer.get("ok"):
        return
    if os.environ.get("EDGEKIT_DEBUG") and child.stderr:  # the child's traceback, for a bug report
        sys.stderr.write(child.stderr)
    cls = getattr(errors, answer.get("error", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.EdgekitError)):
        cls = UnsupportedModel
    raise cls(answer.get("message", f"Reading {path} failed."), hint=answer.get("hint"))


def _child(request: str) -> int:
    from edgekit.core.registry import resolve

    req = json.loads(request)
    try:
        spec = resolve({"source": req["source"]}, "source", "source")
        spec.load(Path(req["path"]), LoadOptions(**req["opts"]), req["kind"])
        answer: dict[str, Any] = {"ok": True}
    except errors.EdgekitError as exc:
        answer = {"ok": False, "error": type(exc).__name__, "message": exc.message, "hint": exc.hint}
    except Exception as exc:  # loaders map vendor errors at their borders: what escapes is a bug in edgekit
        from edgekit.core.border import internal_error

        if os.environ.get("EDGEKIT_DEBUG"):
            import traceback

            traceback.print_exception(exc)
        bug = internal_error(exc)
        answer = {"ok": False, "error": type(bug).__name__, "message": bug.message, "hint": bug.hint}
    sys.stdout.write("\n" + json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover - runs in the child
    raise SystemExit(_child(sys.argv[1]))
