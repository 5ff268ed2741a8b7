"""The arm64 userland an emulated CPU runs in: Debian's own arm64 files plus the runtimes' aarch64 wheels.

Built without running anything under emulation, in about 30 s: `debootstrap --foreign` fetches and unpacks a
minimal Debian arm64 system with python3 (its first stage runs on the host), the downloaded packages are
unpacked over it with `dpkg-deb -x` (python needs no maintainer script), and the host's pip installs the
aarch64 wheels of what a device's install needs into /opt/edgekit with `--platform manylinux..._aarch64
--only-binary=:all:`: edgekit[serve] and the extras of the runtimes whose format records say they belong on an
Arm64 device (onnxruntime, ai-edge-litert, ncnn, numpy, starlette ...: device_extras()). edgekit's own (pure
Python) package is not copied in: every run binds this process's edgekit over /opt/edgekit/edgekit, so the code
that runs under emulation is the code that runs here.

It lives in $EDGEKIT_ARM64_ROOT, else <edgekit cache>/arm64/<suite>, and records what it holds in
edgekit-userland.json. Building needs root (debootstrap makes device nodes), debootstrap and Debian's archive.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgekit.core.errors import MissingDependency, RuntimeFailure, UsageError
from edgekit.core.formats import libraries
from edgekit.core.fsutil import cache_dir

# Debian suite -> its python3 (the wheels must be for that CPython)
SUITES = {"bookworm": "3.11", "trixie": "3.13"}
DEFAULT_SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# Debian packages beyond python3: libgomp1 is the OpenMP runtime wheels built with GCC's OpenMP load
PACKAGES = ("python3", "libgomp1")
# what every device install has, besides edgekit itself and its formats' runtimes (device_extras())
BASE_EXTRAS = ("serve",)
RECORD = "edgekit-userland.json"
SITE = "opt/edgekit"  # inside the userland: the wheels' folder, on PYTHONPATH


@dataclass
class Userland:
    """A built arm64 userland: where it is and what it holds (its edgekit-userland.json)."""

    root: Path
    suite: str = DEFAULT_SUITE
    python: str = ""
    packages: dict[str, str] = field(default_factory=dict)  # the aarch64 wheels: name -> version
    built: str = ""
    extras: tuple[str, ...] = ()  # the edgekit extras those wheels are the requirements of (device_extras())

    @property
    def site(self) -> Path:
        return self.root / SITE

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "suite": self.suite, "python": self.python, "extras": list(self.extras),
                "packages": self.packages, "built": self.built}


def default_root(suite: str = DEFAULT_SUITE) -> Path:
    env = os.environ.get("EDGEKIT_ARM64_ROOT")
    return Path(env) if env else cache_dir() / "arm64" / suite


def find(root: Path | None = None) -> Userland | None:
    """The userland at ROOT (default_root()), or None where none has been built there."""
    root = root or default_root()
    try:
        data = json.loads((root / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not (root / "usr" / "bin" / "python3").exists():
        return None
    return Userland(root=root, suite=str(data.get("suite", DEFAULT_SUITE)), python=str(data.get("python", "")),
                    packages=dict(data.get("packages", {})), built=str(data.get("built", "")),
                    extras=tuple(data.get("extras", ())))


def require(root: Path | None = None) -> Userland:
    """The userland, or a UsageError that says how to build it."""
    found = find(root)
    if found is None:
        where = root or default_root()
        raise UsageError(f"No arm64 userland at {where}: emulated runs need one.",
                         hint="Build it once (about 30 s, needs root, debootstrap and qemu-user-static): "
                              "sudo edgekit emulate setup" + (f" --root {where}" if root else ""))
    return found


def device_extras() -> tuple[str, ...]:
    """The edgekit extras a device installs, whose aarch64 wheels the userland holds: edgekit[serve], and the extra
    of every format library whose record says it belongs on an Arm64 device (Vendor.arm64: onnxruntime's and
    LiteRT's `runtime`, `ncnn`). Read from the format records when asked, so a format registered later counts."""
    on_device = (lib.extra for lib in libraries().values() if lib.arm64 and lib.extra)
    return tuple(dict.fromkeys([*BASE_EXTRAS, *on_device]))


def requirements(extras: tuple[str, ...] | None = None, python: str = "3.11") -> list[str]:
    """edgekit's own requirements for EXTRAS (default: device_extras(); from its installed metadata), markers
    evaluated for PYTHON on Linux."""
    from importlib import metadata

    extras = device_extras() if extras is None else extras

    try:
        reqs = metadata.requires("edgekit") or []
    except metadata.PackageNotFoundError as exc:
        raise UsageError("edgekit is not installed (no package metadata), so the wheels it needs on arm64 are "
                         "unknown.", hint="pip install -e . in the checkout first.") from exc
    out = []
    for req in reqs:
        spec, _, marker = req.partition(";")
        spec, marker = spec.strip(), marker.strip()
        if spec.startswith("edgekit"):
            continue  # edgekit[runtime] inside an extra: its requirements are listed under their own extra
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if extra and extra.group(1) not in extras:
            continue
        below = re.search(r"python_version\s*<\s*['\"]([0-9.]+)['\"]", marker)
        if below and _version(python) >= _version(below.group(1)):
            continue
        out.append(spec)
    return sorted(set(out))


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split(".") if p.isdigit())


def platforms(glibc: str = "2.36") -> list[str]:
    """pip --platform tags an aarch64 Debian with glibc GLIBC runs: manylinux_2_17 .. 2_<glibc>, manylinux2014."""
    top = int(glibc.split(".")[1])
    return [f"manylinux_2_{m}_aarch64" for m in range(top, 16, -1)] + ["manylinux2014_aarch64"]


def _run(argv: list[str], what: str, timeout: float = 1800) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeFailure(f"{what} failed: {exc}.") from exc
    if p.returncode != 0:
        tail = "\n".join((p.stderr or p.stdout).strip().splitlines()[-8:])
        raise RuntimeFailure(f"{what} failed (exit {p.returncode}): {tail}",
                             hint="Debian's archive and the package index must be reachable.")
    return p.stdout


def build(root: Path | None = None, suite: str = DEFAULT_SUITE, mirror: str = MIRROR, force: bool = False,
          progress: Callable[[str], None] = lambda s: None) -> Userland:
    """Build (or with FORCE rebuild) the arm64 userland at ROOT; the one already there when it exists."""
    root = root or default_root(suite)
    if suite not in SUITES:
        raise UsageError(f"Unknown Debian suite '{suite}'.", hint=f"Choose one of: {', '.join(SUITES)}.")
    found = find(root)
    if found is not None and not force:
        progress(f"the arm64 userland at {root} is there (built {found.built})")
        return found
    if os.geteuid() != 0:
        raise UsageError("Building the arm64 userland needs root: debootstrap makes its device nodes.",
                         hint="sudo edgekit emulate setup (once; emulated runs afterwards need no root where user "
                              "namespaces are allowed).")
    for tool, pkg in (("debootstrap", "debootstrap"), ("dpkg-deb", "dpkg")):
        if shutil.which(tool) is None:
            raise MissingDependency(f"'{tool}' is needed to build the arm64 userland.",
                                    hint=f"sudo apt-get install {pkg}")
    python = SUITES[suite]
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        progress(f"debootstrap --foreign --arch=arm64 {suite} (Debian's arm64 packages, unpacked on this host) ...")
        _run(["debootstrap", "--foreign", "--arch=arm64", "--variant=minbase", f"--include={','.join(PACKAGES)}",
              suite, str(tmp), mirror], "debootstrap", timeout=1800)
        archives = tmp / "var" / "cache" / "apt" / "archives"
        debs = sorted(archives.glob("*.deb"))
        progress(f"unpacking {len(debs)} packages ...")
        for deb in debs:
            _run(["dpkg-deb", "-x", str(deb), str(tmp)], f"dpkg-deb -x {deb.name}")
            deb.unlink()
        extras = device_extras()
        reqs = requirements(extras, python=python)
        progress(f"pip: the aarch64 wheels of {', '.join(reqs)} ...")
        plat = [a for p in platforms() for a in ("--platform", p)]
        _run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
              "--target", str(tmp / SITE), "--only-binary=:all:", "--implementation", "cp", "--python-version", python,
              *plat, *reqs], "pip install (aarch64 wheels)", timeout=1800)
        (tmp / SITE / "edgekit").mkdir(exist_ok=True)  # where each run binds this process's edgekit
        (tmp / "tmp").chmod(0o1777)
        land = Userland(root=root, suite=suite, python=python, packages=_installed(tmp / SITE),
                        built=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), extras=extras)
        (tmp / RECORD).write_text(json.dumps({k: v for k, v in land.to_dict().items() if k != "root"}, indent=1))
        if root.exists():
            shutil.rmtree(root)
        os.replace(tmp, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    progress(f"the arm64 userland is at {root}")
    return land


def _installed(site: Path) -> dict[str, str]:
    out = {}
    for info in site.glob("*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].rpartition("-")
        out[name.lower().replace("_", "-")] = version
    return dict(sorted(out.items()))


__all__ = ["BASE_EXTRAS", "DEFAULT_SUITE", "SUITES", "Userland", "build", "default_root", "device_extras", "find",
           "platforms", "require", "requirements"]
