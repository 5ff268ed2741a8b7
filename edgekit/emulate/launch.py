"""Run a command in the arm64 userland on one emulated core: qemu-user through binfmt_misc, in a chroot.

`Emulator(cpu).argv(command, binds)` is the host command line that runs COMMAND (paths as inside) under
`QEMU_CPU=<core>`: `unshare` makes a private mount and PID namespace with its own /proc (psutil and the
runtimes read it; nothing stays mounted on the host after the run), binds each of BINDS at the same path
inside and this process's edgekit package over /opt/edgekit/edgekit, then `chroot`s. binfmt_misc must run
aarch64 binaries through qemu-aarch64-static with the F flag (Debian's qemu-user-static registers it so), so
that a child process the command starts (edgekit's isolated runtime checks) is emulated too.
Run as root, or as a user where unprivileged user namespaces are allowed (`unshare --map-root-user`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from edgekit.core.errors import MissingDependency, UsageError
from edgekit.emulate.cpus import EmulatedCpu
from edgekit.emulate.userland import SITE, Userland, require

BINFMT = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# the host's variables a command under emulation keeps (edgekit's own switches); everything else stays outside
PASSED = ("EDGEKIT_DEBUG", "EDGEKIT_VERBOSE", "EDGEKIT_NO_ISOLATION", "EDGEKIT_ISOLATED", "TF_CPP_MIN_LOG_LEVEL")
# mounts the binds, edgekit's package and the emulated core's /proc/cpuinfo and CPU lists, then enters the
# userland; "$@": the userland root, the bind count, the binds, edgekit's package folder, the CPU facts' folder,
# then `env` and its arguments. The command is not exec'd: the namespace's PID 1 ignores the default action of a
# signal it sends itself, so qemu's way of dying of a guest's SIGILL (kill(getpid(), SIGILL)) hung as PID 1. The
# shell stays PID 1 and exits 128+N where the command died of signal N (`exit_signal` reads it back); it passes
# SIGTERM/SIGINT on to the command (a PID 1 gets only the signals it has a handler for), so `edgekit serve` drains.
_ENTER = r"""set -e
R="$1"; n="$2"; shift 2
while [ "$n" -gt 0 ]; do mount --bind "$1" "$R$1"; shift; n=$((n-1)); done
mount --bind -o ro "$1" "$R/opt/edgekit/edgekit"; shift
mount --bind "$1/cpuinfo" "$R/proc/cpuinfo"
mkdir -p "$R/sys/devices/system/cpu" && mount --bind "$1/cpu" "$R/sys/devices/system/cpu"; shift
set +e
chroot "$R" "$@" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT HUP
while :; do wait "$pid"; rc=$?; kill -0 "$pid" 2>/dev/null || break; done
exit "$rc"
"""


def binfmt_problem(entry: Path = BINFMT) -> str | None:
    """Why binfmt_misc cannot run the userland's aarch64 binaries, or None where it can."""
    if not entry.exists():
        return ("binfmt_misc has no qemu-aarch64 entry: install Debian's qemu-user-static and binfmt-support "
                "(sudo apt-get install qemu-user-static binfmt-support), then sudo update-binfmts --enable "
                "qemu-aarch64")
    text = entry.read_text(errors="replace")
    if not text.startswith("enabled"):
        return "binfmt_misc's qemu-aarch64 entry is disabled: sudo update-binfmts --enable qemu-aarch64"
    flags = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("flags:")), "")
    if "F" not in flags:
        return (f"binfmt_misc's qemu-aarch64 entry lacks the F flag (flags: {flags or 'none'}), so a chroot cannot "
                "find its interpreter: use Debian's qemu-user-static, which registers it with F")
    return None


def enable_binfmt() -> None:
    """As root: mount binfmt_misc where it is not, and enable qemu-aarch64 (Debian's update-binfmts)."""
    import subprocess

    if BINFMT.exists() or os.geteuid() != 0:
        return
    subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", "/proc/sys/fs/binfmt_misc"], capture_output=True,
                   check=False)
    if shutil.which("update-binfmts"):
        subprocess.run(["update-binfmts", "--enable", "qemu-aarch64"], capture_output=True, check=False)


class Emulator:
    """One emulated core in one userland: builds the host command lines that run commands there."""

    def __init__(self, cpu: EmulatedCpu, land: Userland | None = None) -> None:
        self.cpu = cpu
        self.land = land or require()

    def check(self) -> None:
        """A clear error where this machine cannot run the userland (before anything is started)."""
        missing = [t for t in ("unshare", "chroot") if shutil.which(t) is None]
        if missing:
            raise MissingDependency(f"Emulated runs need {' and '.join(missing)} (util-linux, coreutils).",
                                    hint="sudo apt-get install util-linux coreutils")
        problem = binfmt_problem()
        if problem is not None:
            raise MissingDependency(f"This machine cannot run arm64 binaries: {problem.split(': ', 1)[0]}.",
                                    hint=problem.split(": ", 1)[-1])

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment inside: a clean one (the host's pip, proxy and Python settings stay outside)."""
        env = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", "PYTHONPATH": f"/{SITE}",
               # edgekit's package is bound read-only: its bytecode goes to the userland's own cache
               "PYTHONPYCACHEPREFIX": "/var/cache/edgekit-pycache", "QEMU_CPU": self.cpu.core,
               "EDGEKIT_EMULATED_CPU": f"{self.cpu.device}:{self.cpu.core}"}
        env.update({k: os.environ[k] for k in PASSED if k in os.environ})
        env.update(extra or {})
        return env

    def argv(self, command: Sequence[str], binds: Sequence[Path] = (), env: dict[str, str] | None = None,
             cwd: Path | None = None) -> list[str]:
        """The host command line that runs COMMAND inside, with BINDS (absolute host folders) at their own paths.

        CWD: the folder it starts in (one of BINDS, or inside one); the userland's / by default."""
        package = Path(__file__).resolve().parents[1]  # this process's edgekit package
        root = self.land.root.resolve()
        folders = [str(b) for b in outermost(binds)]
        user = [] if os.geteuid() == 0 else ["--map-root-user"]
        enter = ["sh", "-c", _ENTER, "sh", str(root), str(len(folders)), *folders, str(package), str(self.cpu_facts())]
        return ["unshare", "--mount", "--pid", "--fork", "--kill-child", f"--mount-proc={root}/proc", *user, *enter,
                "/usr/bin/env", "-i", *(["-C", str(Path(cwd).resolve())] if cwd is not None else []),
                *(f"{k}={v}" for k, v in self.env(env).items()), *command]

    @staticmethod
    def exit_signal(returncode: int) -> int | None:
        return exit_signal(returncode)

    def cpu_facts(self) -> Path:
        """The emulated core as the device's Linux shows it: /proc/cpuinfo and /sys/devices/system/cpu's lists.

        Under qemu-user, /proc/cpuinfo is the host's (x86) and the userland has no /sys: the runtimes' CPU
        detection (pytorch/cpuinfo in onnxruntime and XNNPACK) then fails ("failed to parse the list of possible
        processors") and falls back to generic kernels, which is not what the device runs. Written once per core
        and core count under edgekit's cache."""
        from edgekit.core.fsutil import cache_dir

        cores = os.cpu_count() or 1
        folder = cache_dir() / "arm64" / "cpu-facts" / f"{self.cpu.core}-{cores}"
        if not (folder / "cpu" / "online").exists():
            (folder / "cpu").mkdir(parents=True, exist_ok=True)
            (folder / "cpuinfo").write_text(self.cpu.cpuinfo(cores))
            span = f"0-{cores - 1}" if cores > 1 else "0"
            for name in ("possible", "present", "online"):
                (folder / "cpu" / name).write_text(span + "\n")
            (folder / "cpu" / "kernel_max").write_text("255\n")
        return folder

    @contextlib.contextmanager
    def mountpoints(self, binds: Sequence[Path]) -> Iterator[None]:
        """The folders BINDS are mounted on, made inside the userland for the run and removed after it."""
        made: list[Path] = []
        root = self.land.root.resolve()
        try:
            for b in outermost(binds):
                inside = root / str(Path(b).resolve()).lstrip("/")
                missing = []
                p = inside
                while not p.exists() and p != root:
                    missing.append(p)
                    p = p.parent
                try:
                    inside.mkdir(parents=True, exist_ok=True)
                except PermissionError as exc:
                    raise UsageError(f"Cannot make {inside} in the arm64 userland: {exc.strerror}.",
                                     hint="Run as the user who built it (sudo), or build one of your own with "
                                          "edgekit emulate setup --root DIR and set EDGEKIT_ARM64_ROOT=DIR.") from exc
                made.extend(reversed(missing))
            yield
        finally:
            for p in reversed(made):
                with contextlib.suppress(OSError):
                    p.rmdir()


def exit_signal(returncode: int) -> int | None:
    """The signal a command run by Emulator.argv died of (its shell exits 128+N), else None."""
    if returncode < 0:
        return -returncode
    return returncode - 128 if 128 < returncode < 128 + 65 else None


def outermost(binds: Sequence[Path]) -> list[Path]:
    """BINDS resolved, each once, without those inside another (its folder is bound with it), shortest first."""
    out: list[Path] = []
    for b in sorted({Path(b).resolve() for b in binds}, key=lambda p: (len(p.parts), str(p))):
        if not any(b == o or o in b.parents for o in out):
            out.append(b)
    return out


__all__ = ["Emulator", "exit_signal", "outermost", "binfmt_problem", "enable_binfmt"]
