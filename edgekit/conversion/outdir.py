"""One writer per output folder: the output lock, and the staging folder a run works in.

Two runs into one `--out` would publish over each other's files; two runs into sibling folders
(`out/resnet` and `out/resnet-int8`) must not touch each other at all. So:

- `output_lock(out)` holds `.<name>.edgekit-lock` beside OUT for the whole run: an exclusive
  `flock` on it (the kernel lets go when the process dies, however it dies), and inside it the
  owner (pid, host, start time, command) for the message a second run gets. A lock file whose
  flock is free was left by a dead process and is taken over. Where the filesystem has no flock,
  the recorded owner decides: a lock of a dead pid on this host is taken over, any other refused.
- `staging_dir(out)` makes `.edgekit-staging-<random>-<name>` beside OUT (same filesystem, so the
  final os.replace is atomic) and writes its owner into it. The random part comes first, so no
  staging folder's name is a prefix of another's; stale folders are found by their owner file,
  never by a name pattern, and a folder is stale only when its owner is gone.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from edgekit.core.errors import UsageError
from edgekit.core.fsutil import atomic_write_json
from edgekit.core.records import Record

STAGING_PREFIX = ".edgekit-staging-"
LOCK_SUFFIX = ".edgekit-lock"
OWNER_FILE = "owner.json"
# a staging folder with no owner file (made by an edgekit older than owner files) is stale after this
UNOWNED_STALE_S = 3600.0

# output locks held here, by (thread, folder): re-entrant for the thread that holds one (the API and execute
# both take it); another thread of this process opens its own file description, which flock refuses
_HELD: dict[tuple[int, Path], int] = {}


@dataclass(frozen=True)
class Owner(Record):
    """Who holds an output lock or a staging folder: enough to tell whether it is still running."""

    pid: int = 0
    host: str = ""
    started: str = ""  # ISO 8601, UTC
    pid_start: int | None = None  # the process's start time (Linux /proc clock ticks): tells a reused pid apart
    out: str = ""  # the output folder's name
    command: str = ""

    @classmethod
    def me(cls, out: str) -> Owner:
        return cls(pid=os.getpid(), host=socket.gethostname(),
                   started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                   pid_start=_pid_start(os.getpid()), out=out, command=_command())

    @classmethod
    def read(cls, path: Path) -> Owner | None:
        """The owner recorded in PATH; None where there is none or it is not an owner record."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
                return None
            return cls.from_dict(data)
        except (OSError, ValueError, TypeError):
            return None

    def alive(self) -> bool | None:
        """Whether the owner still runs: True/False on this host, None (cannot tell) on another."""
        if self.host != socket.gethostname():
            return None
        if self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # someone else's process: it exists
            pass
        now = _pid_start(self.pid)
        return self.pid_start is None or now is None or now == self.pid_start

    def describe(self) -> str:
        what = f"pid {self.pid} on {self.host or 'an unknown host'}"
        if self.started:
            what += f", started {self.started}"
        return what + (f": {self.command}" if self.command else "")


def _pid_start(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (start time after boot, in clock ticks); None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _command() -> str:
    argv = [Path(sys.argv[0]).name if sys.argv else "python", *sys.argv[1:]]
    text = " ".join(argv)
    return text if len(text) <= 300 else text[:297] + "..."


def lock_path(out_dir: Path) -> Path:
    """The lock file of OUT_DIR: beside it, so a refused or failed run leaves OUT_DIR as it was."""
    return out_dir.parent / f".{out_dir.name}{LOCK_SUFFIX}"


class OutputBusy(UsageError):
    """Another run is writing into the same output folder."""


@contextlib.contextmanager
def output_lock(out_dir: str | os.PathLike[str]) -> Iterator[Owner]:
    """Hold the one-writer lock of OUT_DIR for the block; OutputBusy (exit 2) while another run holds it.

    Re-entrant within one process. Released (the file removed) on success, on any exception and on
    KeyboardInterrupt; a process killed outright leaves the file, whose flock the kernel has freed,
    and the next run takes it over.
    """
    out = Path(out_dir).absolute()
    key = (threading.get_ident(), out)
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield Owner.me(out.name)
        finally:
            _HELD[key] -= 1
        return
    path = lock_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, me = _acquire(path, out)
    _HELD[key] = 1
    try:
        yield me
    finally:
        del _HELD[key]
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                os.unlink(path)  # unlinked while still locked: a run that opened it retries on the new file
        os.close(fd)


def refuse_if_busy(out_dir: str | os.PathLike[str]) -> None:
    """OutputBusy now if another run holds OUT_DIR's lock: a check before hours of work, not the lock itself."""
    if lock_path(Path(out_dir).absolute()).exists():
        with output_lock(out_dir):
            pass


def _acquire(path: Path, out: Path) -> tuple[int, Owner]:
    for _ in range(50):  # each retry follows a release that unlinked the file we opened: rare, short
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _flock(fd, path, out):
                raise _busy(out, Owner.read(path))
            if not os.path.samestat(os.fstat(fd), os.stat(path)):
                os.close(fd)
                continue
        except FileNotFoundError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        me = Owner.me(out.name)
        data = (json.dumps(me.to_dict(), indent=2) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        os.fsync(fd)
        return fd, me
    raise OutputBusy(f"Could not take the lock {path} of {out}: it kept being replaced.",
                     hint="Another edgekit run is starting and stopping on this folder; try again.")


def _flock(fd: int, path: Path, out: Path) -> bool:
    """Try the exclusive flock on FD; where the filesystem has none, judge the recorded owner instead."""
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): the recorded owner decides
        return _owner_gone(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError:  # ENOLCK/EOPNOTSUPP: a filesystem without locks
        return _owner_gone(path)


def _owner_gone(path: Path) -> bool:
    owner = Owner.read(path)
    return owner is None or owner.alive() is False


def _busy(out: Path, owner: Owner | None) -> OutputBusy:
    who = owner.describe() if owner is not None else "another process"
    return OutputBusy(
        f"Another edgekit run is writing into {out} ({who}); one output folder takes one run at a time.",
        hint=f"Wait for it to finish, or pass a different --out. If that run is gone, remove {lock_path(out)}.",
    )


@contextlib.contextmanager
def staging_dir(out_dir: Path) -> Iterator[Path]:
    """A scratch folder beside OUT_DIR with its owner recorded inside; always removed at the end.

    Staging folders of runs that are gone (killed, or crashed) are removed first: they are
    edgekit's own, hidden, and never hold a user file. A live run's folder is never touched,
    whatever output folder it is for.
    """
    parent = out_dir.parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(parent)
    tmp = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, suffix=f"-{out_dir.name}", dir=parent))
    try:
        atomic_write_json(tmp / OWNER_FILE, Owner.me(out_dir.name).to_dict())
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove_stale_staging(parent: Path) -> list[Path]:
    """Remove the staging folders in PARENT whose owner is gone; the ones removed."""
    removed = []
    for folder in parent.glob(f"{STAGING_PREFIX}*"):
        if folder.is_dir() and not folder.is_symlink() and _stale(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _stale(folder: Path) -> bool:
    owner = Owner.read(folder / OWNER_FILE)
    if owner is not None:
        return owner.alive() is False
    try:  # no owner file: one being made this instant, or one from an older edgekit
        return time.time() - folder.stat().st_mtime > UNOWNED_STALE_S
    except OSError:
        return False


__all__ = ["LOCK_SUFFIX", "OWNER_FILE", "STAGING_PREFIX", "Owner", "OutputBusy", "lock_path",
           "output_lock", "refuse_if_busy", "remove_stale_staging", "staging_dir"]
