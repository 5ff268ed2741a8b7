"""One writer per output folder: the lock, and staging folders that only their owner's death makes stale.

Real processes hold the lock and the staging folders here (python -c children), since what is
guarded against is another process: a concurrent run, or one killed half-way.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from edgekit.conversion import outdir
from edgekit.conversion.outdir import OWNER_FILE, STAGING_PREFIX, OutputBusy, Owner, lock_path, output_lock, staging_dir
from edgekit.core.errors import EXIT_USAGE

HOLD = """
import signal, sys, time
from pathlib import Path
from edgekit.conversion.outdir import output_lock, staging_dir
# Ctrl-C interrupts, as at a terminal: a shell's background job (a CI runner's) inherits SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
what, out = sys.argv[1], Path(sys.argv[2])
ctx = output_lock(out) if what == "lock" else staging_dir(out)
with ctx as held:
    print(held if what == "stage" else "locked", flush=True)
    time.sleep(60)
"""


def _hold(what: str, out: Path) -> tuple[subprocess.Popen[str], str]:
    """A child process holding OUT's lock ("lock") or a staging folder for OUT ("stage"); what it printed."""
    child = subprocess.Popen([sys.executable, "-c", HOLD, what, str(out)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    assert line, "the child did not start"
    return child, line


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _stop(child: subprocess.Popen[str], sig: int = signal.SIGKILL) -> int:
    child.send_signal(sig)
    return child.wait(timeout=30)


# ------------------------------------------------------------------ staging folders


def test_sibling_run_keeps_a_live_staging_folder(tmp_path: Path) -> None:
    """The race of issue 12: a run into out/resnet removed the live staging folder of out/resnet-int8.

    The old cleanup globbed `.edgekit-staging-resnet-*`, which matched `.edgekit-staging-resnet-int8-...`.
    """
    child, live = _hold("stage", tmp_path / "resnet-int8")
    try:
        (Path(live) / "model.onnx").write_bytes(b"half written by the other run")
        with staging_dir(tmp_path / "resnet") as mine:
            assert mine.is_dir()
        assert (Path(live) / "model.onnx").read_bytes() == b"half written by the other run"
        with staging_dir(tmp_path / "resnet-int8"):  # even a run into the same name leaves a live owner's folder
            assert Path(live).is_dir()
    finally:
        _stop(child)


def test_staging_names_are_not_prefixes_of_each_other(tmp_path: Path) -> None:
    with staging_dir(tmp_path / "resnet") as a, staging_dir(tmp_path / "resnet-int8") as b:
        assert not b.name.startswith(a.name) and not a.name.startswith(b.name)
        assert a.name.startswith(STAGING_PREFIX) and a.name.endswith("-resnet")
        owner = json.loads((a / OWNER_FILE).read_text())
        assert owner["pid"] == os.getpid() and owner["host"] == socket.gethostname() and owner["out"] == "resnet"


def test_a_killed_runs_staging_folder_is_removed(tmp_path: Path) -> None:
    child, live = _hold("stage", tmp_path / "resnet-int8")
    _stop(child)  # SIGKILL: its `finally` never ran, the folder stays behind
    assert Path(live).is_dir()
    with staging_dir(tmp_path / "resnet"):  # any later run in this folder clears it, whatever its name
        assert not Path(live).exists()


def _fake_staging(parent: Path, name: str, owner: dict[str, object] | None) -> Path:
    folder = parent / f"{STAGING_PREFIX}{name}"
    folder.mkdir()
    if owner is not None:
        (folder / OWNER_FILE).write_text(json.dumps(owner))
    return folder


def test_staleness_is_judged_by_the_owner(tmp_path: Path) -> None:
    me = Owner.me("x").to_dict()
    dead = _fake_staging(tmp_path, "a-out", {**me, "pid": _dead_pid()})
    reused = _fake_staging(tmp_path, "b-out", {**me, "pid_start": (me["pid_start"] or 0) + 1})  # our pid, not us
    elsewhere = _fake_staging(tmp_path, "c-out", {**me, "pid": _dead_pid(), "host": "another-host"})
    fresh_unowned = _fake_staging(tmp_path, "d-out", None)
    old_unowned = _fake_staging(tmp_path, "e-out", None)
    os.utime(old_unowned, (time.time() - 2 * outdir.UNOWNED_STALE_S,) * 2)
    live = _fake_staging(tmp_path, "f-out", me)
    removed = outdir.remove_stale_staging(tmp_path)
    assert sorted(p.name for p in removed) == sorted(p.name for p in (dead, reused, old_unowned))
    assert elsewhere.is_dir() and fresh_unowned.is_dir() and live.is_dir()


def test_staging_dir_is_removed_on_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), staging_dir(tmp_path / "out") as work:
        (work / "half.onnx").write_bytes(b"partial")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ the output lock


def test_lock_is_released_on_success_error_and_interrupt(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with output_lock(out) as me:
        held = json.loads(lock_path(out).read_text())
        assert held["pid"] == os.getpid() == me.pid and held["host"] == socket.gethostname() and held["started"]
    assert not lock_path(out).exists()
    for exc in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)), output_lock(out):
            raise exc
        assert not lock_path(out).exists()
    assert list(tmp_path.iterdir()) == []  # the lock never creates the output folder


def test_lock_refuses_another_process_and_is_reentrant_here(tmp_path: Path) -> None:
    out = tmp_path / "out"
    child, _ = _hold("lock", out)
    try:
        with pytest.raises(OutputBusy) as exc, output_lock(out):
            pass
        assert exc.value.exit_code == EXIT_USAGE
        assert f"pid {child.pid}" in exc.value.message and socket.gethostname() in exc.value.message
        assert "--out" in (exc.value.hint or "")
    finally:
        _stop(child, signal.SIGINT)
    with output_lock(out), output_lock(out):  # the API and pipeline.run() both take it in one run
        assert lock_path(out).exists()
    assert not lock_path(out).exists()


def test_another_thread_is_refused(tmp_path: Path) -> None:
    out, seen = tmp_path / "out", []

    def other() -> None:
        try:
            with output_lock(out):
                seen.append("got it")
        except OutputBusy:
            seen.append("busy")

    with output_lock(out):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == ["busy"]


def test_sigint_releases_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "out"
    child, _ = _hold("lock", out)
    assert lock_path(out).exists()
    assert _stop(child, signal.SIGINT) != 0  # KeyboardInterrupt through the `with`
    assert not lock_path(out).exists()


def test_a_dead_owners_lock_is_taken_over(tmp_path: Path) -> None:
    out = tmp_path / "out"
    child, _ = _hold("lock", out)
    _stop(child)  # SIGKILL: the file stays, the kernel dropped the flock
    assert json.loads(lock_path(out).read_text())["pid"] == child.pid
    with output_lock(out):
        assert json.loads(lock_path(out).read_text())["pid"] == os.getpid()
    assert not lock_path(out).exists()


def test_without_flock_the_recorded_owner_decides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    def no_locks(*_a: object) -> None:
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    out = tmp_path / "out"
    lock_path(out).write_text(json.dumps({**Owner.me("out").to_dict(), "pid": _dead_pid()}))
    with output_lock(out):  # a dead pid's lock is taken over
        pass
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock_path(out).write_text(json.dumps({**Owner.me("out").to_dict(), "pid": child.pid, "pid_start": None}))
        with pytest.raises(OutputBusy), output_lock(out):
            pass
    finally:
        child.kill()
        child.wait()


def test_convert_into_a_locked_folder_is_refused(tmp_path: Path, bundled_pt2: Path) -> None:
    out = tmp_path / "out"
    with output_lock(out):
        run = subprocess.run([sys.executable, "-m", "edgekit.cli", "convert", str(bundled_pt2), "--out", str(out)],
                             capture_output=True, text=True, timeout=300)
    assert run.returncode == EXIT_USAGE, run.stderr
    assert f"Another edgekit run is writing into {out.absolute()} (pid {os.getpid()}" in " ".join(run.stderr.split())
    assert "Traceback" not in run.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written: no output folder, no staging folder, no lock
