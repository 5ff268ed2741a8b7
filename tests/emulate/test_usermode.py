"""edgekit on each Raspberry Pi generation's core, under qemu user mode in an arm64 userland (edgekit.emulate).

What this proves, on emulated Cortex-A53 (Pi 3 / Zero 2 W), A72 (Pi 4) and A76 (Pi 5), with the aarch64 wheels a Pi
installs: an instruction a core lacks traps there and is named; every artifact the bundled models make (ONNX and
TFLite at fp32/fp16/dynamic/int8, the detector) runs and computes what it computes on this x86 host, or is named as
unable to; `edgekit profile` reports the core; `edgekit serve` answers tritonclient, /classify and /detect; and
`convert --validate-on` takes the verdict on the device's core. Timings under emulation are never asserted on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from edgekit.emulate.compat import check
from edgekit.emulate.cpus import emulated_cpu, emulated_cpus
from edgekit.emulate.launch import Emulator, exit_signal

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PI_CORES = ["pi3", "pi4", "pi5"]

# ldaddal w1, w0, [x0]; ret: an LSE atomic (ARMv8.1), called through ctypes inside the userland
LSE_PROBE = """
import ctypes, mmap, struct
from edgekit.core.sigill import report_on_sigill
report_on_sigill()
buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(struct.pack("<II", 0xB8E10000, 0xD65F03C0))
f = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
cell = ctypes.c_uint32(5)
f(ctypes.addressof(cell))
print("ran", cell.value)
"""


def test_the_userland_holds_what_the_format_records_put_on_a_device(arm64_userland) -> None:
    """Its edgekit-userland.json names the extras the format records put on an Arm64 device (Vendor.arm64:
    edgekit.emulate.userland.device_extras), and it holds an aarch64 wheel of each such runtime library."""
    from edgekit.core.formats import libraries
    from edgekit.emulate.userland import device_extras

    if not arm64_userland.extras:
        pytest.skip(f"the userland at {arm64_userland.root} was built before its record named its extras "
                    "(edgekit emulate setup --force rebuilds it)")
    assert arm64_userland.extras == device_extras()
    on_device = [dist for lib in libraries().values() if lib.arm64 for dist in lib.dists]
    assert set(on_device) >= {"onnxruntime", "ai-edge-litert", "ncnn"}
    assert set(on_device) <= set(arm64_userland.packages), arm64_userland.packages


@pytest.mark.parametrize(("pi", "traps"), [("pi3", True), ("pi4", True), ("pi5", False)])
def test_an_lse_atomic_traps_on_the_cores_without_it_and_is_named(arm64_userland, pi: str, traps: bool) -> None:
    emu = Emulator(emulated_cpu(pi), arm64_userland)
    p = subprocess.run(emu.argv(["python3", "-c", LSE_PROBE]), capture_output=True, text=True, timeout=300)
    if traps:
        assert exit_signal(p.returncode) == 4, (p.returncode, p.stderr[-800:])  # SIGILL
        assert "LSE atomic read-modify-write" in p.stderr and "0xb8e10000" in p.stderr
    else:
        assert p.returncode == 0 and p.stdout.startswith("ran"), p.stderr[-800:]


@pytest.fixture(scope="module")
def detector(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled digits detector to ONNX and TFLite, fp32 and int8 (about 20 s)."""
    out = tmp_path_factory.mktemp("detector") / "digits_yolo"
    run = subprocess.run([sys.executable, "-m", "edgekit.cli", "convert", str(REPO / "models" / "digits_yolo.onnx"),
                          "--target", "onnx,tflite", "--quantize", "fp32,int8", "--calib",
                          str(REPO / "models" / "digits_detect_val.npz"), "-o", str(out)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode in (0, 5), run.stderr[-2000:]  # 5: an int8 below its bar is still an artifact to run
    return out


def test_every_bundled_artifact_on_every_pi_core(arm64_userland, bundled_conversion, detector) -> None:
    folders = [bundled_conversion.manifest_path.parent, detector]
    rows = [*check(folders[:1], emulated_cpus(PI_CORES), inputs="mnist", land=arm64_userland),
            *check(folders[1:], emulated_cpus(PI_CORES), inputs=str(REPO / "models" / "digits_detect_val.npz"),
                   land=arm64_userland)]
    # 8 MNIST artifacts + 4 detector artifacts, the TFLite ones with XNNPACK and with LiteRT's builtin kernels,
    # on three cores
    assert len(rows) == 3 * (4 + 4 * 2 + 2 + 2 * 2)
    for row in rows:  # each ran (no Pi core lacks what these wheels need) with the aarch64 runtime of its format
        assert row.status in ("agrees", "differs"), row
        assert row.runtime.split()[0] == {"onnx": "onnxruntime", "tflite": "litert"}[row.format], row
        if row.precision == "fp32" or (row.kernels == "xnnpack" and row.precision == "int8"):
            assert row.status == "agrees", row  # what x86 computes, to 1e-3 (XNNPACK's int8 is exact across CPUs)
        assert row.cosine is not None and row.cosine > 0.999, row  # a difference in rounding, never another answer
    # LiteRT's builtin int8 kernels round differently on Arm than on x86: the detector's int8, on every Pi core
    # (onnxruntime's int8 agrees or differs by the form --for made it in: host's, this machine's CPU; the cosine
    # above holds either way)
    assert {r.status for r in rows if r.artifact == "digits_yolo.int8.tflite" and r.kernels == "builtin"} == {"differs"}
    # the Pi 5's fp16 arithmetic shows where a runtime uses it: onnxruntime's fp16 kernels on the A76
    fp16_onnx = [r for r in rows if r.core == "cortex-a76" and r.format == "onnx" and r.precision == "fp16"]
    assert fp16_onnx and all(r.relative_difference > 0 for r in fp16_onnx)


def test_profile_on_an_emulated_core_reports_the_core(arm64_userland, bundled_conversion, monkeypatch) -> None:
    monkeypatch.setenv("EDGEKIT_ARM64_ROOT", str(arm64_userland.root))
    art = next(a for a in bundled_conversion.manifest.artifacts if a.format == "tflite" and a.precision == "int8")
    path = bundled_conversion.manifest_path.parent / art.path
    p = subprocess.run([sys.executable, "-m", "edgekit.cli", "emulate", "run", "--on", "pi5", "profile", str(path),
                        "--json", "--runs", "20", "--min-seconds", "0.1"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    result = json.loads(p.stdout)
    assert result["device"]["machine"] == "aarch64"
    assert result["device"]["emulated"]["core"] == "cortex-a76"
    assert any("not the device's" in n for n in result["notes"])
    assert result["artifact"]["sha256"] == art.sha256
    assert "Error in cpuinfo" not in p.stderr  # the runtimes read the emulated core's /proc/cpuinfo and CPU lists


def test_serve_on_an_emulated_pi4_answers_tritonclient_and_classify(arm64_userland, bundled_conversion, detector,
                                                                    monkeypatch, tmp_path: Path) -> None:
    import httpx

    from edgekit.data.calibration import mnist_split
    from edgekit.testing.server import ServerProcess, mnist_digits_right
    from tests.serve.test_serve_detect_server import _encode, digits_picture

    monkeypatch.setenv("EDGEKIT_ARM64_ROOT", str(arm64_userland.root))
    folder = bundled_conversion.manifest_path.parent
    server = ServerProcess([str(folder), str(detector), "--precision", "int8"], tmp_path / "serve.log", timeout=300,
                           on="pi4")
    try:
        assert mnist_digits_right(server.url, "mnist_cnn", 20) >= 19  # tritonclient, as a user's client asks
        _, _, x_test, y_test = mnist_split()
        png = _encode(np.repeat(x_test[0].astype(np.uint8)[..., None], 3, axis=2))
        r = httpx.post(f"{server.base}/v2/models/mnist_cnn/classify", content=png,
                       headers={"content-type": "image/png"}, timeout=60)
        assert r.status_code == 200 and r.json()["predictions"][0]["index"] == int(y_test[0]), r.text
        picture, truth = digits_picture()
        r = httpx.post(f"{server.base}/v2/models/digits_yolo/detect", content=_encode(picture),
                       headers={"content-type": "image/png"}, timeout=120)
        assert r.status_code == 200, r.text
        assert {d["index"] for d in r.json()["detections"]} >= {cls for cls, _ in truth}
    finally:
        code = server.stop()
    assert code == 0, server.text()[-2000:]  # SIGTERM reached the server inside the namespace: it drained


def test_validate_on_pi5_takes_the_verdict_on_the_pi5s_core(arm64_userland, bundled_pt2, monkeypatch,
                                                            tmp_path: Path) -> None:
    from edgekit.conversion.pipeline import convert

    monkeypatch.setenv("EDGEKIT_ARM64_ROOT", str(arm64_userland.root))
    result = convert(bundled_pt2, "onnx", "fp32,fp16", calib="mnist", out=tmp_path / "out", val_size=100,
                     validate_on="pi4,pi5")
    by = {a.precision: a for a in result.manifest.artifacts}
    for art in by.values():
        on = art.extra["validated_on"]
        assert set(on) == {"raspberry-pi-4", "raspberry-pi-5"}
        for device, rec in on.items():
            assert rec["ran"] and rec["passed"], (art.path, device, rec)
            assert rec["cpu"]["core"] == {"raspberry-pi-4": "cortex-a72", "raspberry-pi-5": "cortex-a76"}[device]
            assert rec["fidelity"]["samples"] == 100
    # the fp16 ONNX is computed in fp16 on the Pi 5 (onnxruntime's fp16 kernels), in float32 on the Pi 4
    fp16 = by["fp16"].extra["validated_on"]
    assert fp16["raspberry-pi-5"]["vs_host"]["output"]["relative_difference"] > 10 * max(
        fp16["raspberry-pi-4"]["vs_host"]["output"]["relative_difference"], 1e-7)


def test_without_proc_edgekit_says_so(arm64_userland, bundled_conversion) -> None:
    """A chroot made without /proc (the cause of the crash on record): a usage error, not a bug in edgekit."""
    art = next(a for a in bundled_conversion.manifest.artifacts if a.format == "tflite" and a.precision == "int8")
    src = bundled_conversion.manifest_path.parent / art.path
    root = arm64_userland.root
    dest = root / "tmp" / "noproc.tflite"
    dest.write_bytes(src.read_bytes())
    import edgekit

    package = Path(edgekit.__file__).resolve().parent
    script = (f'mount --bind -o ro "{package}" "{root}/opt/edgekit/edgekit" && chroot "{root}" /usr/bin/env -i '
              "QEMU_CPU=cortex-a72 PYTHONPATH=/opt/edgekit PYTHONDONTWRITEBYTECODE=1 python3 -m edgekit.cli profile "
              "/tmp/noproc.tflite")
    try:
        p = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    finally:
        dest.unlink()
    assert p.returncode == 2, p.stderr[-1500:]
    assert "/proc is not mounted" in p.stderr and "bug in edgekit" not in p.stderr


def test_the_emulate_commands_as_a_user_types_them(arm64_userland, bundled_conversion, monkeypatch,
                                                    tmp_path: Path) -> None:
    """`edgekit emulate status` and `edgekit emulate check` (the table, its JSON, its exit code)."""
    monkeypatch.setenv("EDGEKIT_ARM64_ROOT", str(arm64_userland.root))
    edgekit = [sys.executable, "-m", "edgekit.cli", "emulate"]
    p = subprocess.run([*edgekit, "status", "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    status = json.loads(p.stdout)
    assert status["binfmt_problem"] is None and status["userland"]["packages"]["onnxruntime"]
    assert {c["core"] for c in status["cpus"]} >= {"cortex-a53", "cortex-a72", "cortex-a76"}
    folder = bundled_conversion.manifest_path.parent
    p = subprocess.run([*edgekit, "check", str(folder), "--on", "pi4", "--input", "mnist", "--samples", "4", "--output",
                        str(tmp_path / "compat.json")], capture_output=True, text=True, timeout=900)
    rows = json.loads((tmp_path / "compat.json").read_text())["rows"]
    assert len(rows) == 4 + 4 * 2 and {r["core"] for r in rows} == {"cortex-a72"}
    # exit 1 where a row is not "agrees" (LiteRT's builtin int8 kernels round differently on Arm), else 0
    assert p.returncode == (0 if all(r["status"] == "agrees" for r in rows) else 1), p.stderr[-1500:]
    assert "| mnist_cnn.int8.tflite | litert" in p.stdout
    p = subprocess.run([*edgekit, "check", str(folder), "--on", "pi9"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "did you mean 'pi5'" in p.stderr
