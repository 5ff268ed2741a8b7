"""The emulated runs' plumbing without qemu: binfmt_misc's entry, the command line, the mount points, the userland."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgekit.core.errors import UsageError
from edgekit.emulate import userland
from edgekit.emulate.cpus import emulated_cpu
from edgekit.emulate.launch import Emulator, binfmt_problem, exit_signal, outermost
from edgekit.emulate.run import binds_for

# /proc/sys/fs/binfmt_misc/qemu-aarch64 as Debian's qemu-user-static registers it (read on this machine)
ENTRY = """enabled
interpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P
flags: PF
offset 0
magic 7f454c460201010000000000000000000200b700
mask ffffffffffffff00fffffffffffffffffeffffff
"""


def test_binfmt_entry(tmp_path: Path) -> None:
    entry = tmp_path / "qemu-aarch64"
    assert "qemu-user-static" in (binfmt_problem(entry) or "")
    entry.write_text(ENTRY)
    assert binfmt_problem(entry) is None
    entry.write_text(ENTRY.replace("enabled", "disabled"))
    assert "disabled" in (binfmt_problem(entry) or "")
    entry.write_text(ENTRY.replace("flags: PF", "flags: P"))
    assert "F flag" in (binfmt_problem(entry) or "")


def _land(tmp_path: Path, **record: object) -> userland.Userland:
    root = tmp_path / "arm64"
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "python3").write_text("")
    (root / userland.RECORD).write_text(json.dumps({"suite": "bookworm", "python": "3.11",
                                                    "packages": {"onnxruntime": "1.32.0"}, "built": "2026-11-27",
                                                    **record}))
    found = userland.find(root)
    assert found is not None
    return found


def test_the_command_line_enters_the_userland_on_the_core(tmp_path: Path) -> None:
    land = _land(tmp_path)
    emu = Emulator(emulated_cpu("pi4"), land)
    argv = emu.argv(["python3", "-c", "pass"], [tmp_path / "a", tmp_path / "a" / "b"], cwd=tmp_path / "a")
    assert argv[:5] == ["unshare", "--mount", "--pid", "--fork", "--kill-child"]
    assert f"--mount-proc={land.root.resolve()}/proc" in argv
    assert "QEMU_CPU=cortex-a72" in argv and "EDGEKIT_EMULATED_CPU=raspberry-pi-4:cortex-a72" in argv
    assert argv[-3:] == ["python3", "-c", "pass"]
    assert argv[argv.index("sh", 8) + 2] == "1"  # one bind: a/b is inside a
    facts = Path(argv[argv.index("/usr/bin/env") - 1])
    assert "CPU part\t: 0xd08" in (facts / "cpuinfo").read_text()  # the A72
    assert (facts / "cpu" / "possible").read_text().startswith("0")


def test_mountpoints_are_made_for_the_run_and_removed_after(tmp_path: Path) -> None:
    land = _land(tmp_path)
    emu = Emulator(emulated_cpu("pi5"), land)
    folder = tmp_path / "work" / "out"
    folder.mkdir(parents=True)
    inside = land.root / str(folder.resolve()).lstrip("/")
    with emu.mountpoints([folder]):
        assert inside.is_dir()
    assert not inside.exists() and (land.root / "usr").is_dir()


def test_outermost_and_exit_signal(tmp_path: Path) -> None:
    assert outermost([tmp_path / "a" / "b", tmp_path / "a", tmp_path / "c"]) == [tmp_path / "a", tmp_path / "c"]
    assert exit_signal(132) == 4 and exit_signal(-11) == 11 and exit_signal(0) is None and exit_signal(2) is None


def test_binds_for_names_the_folders_of_existing_paths(tmp_path: Path) -> None:
    f = tmp_path / "m.tflite"
    f.write_bytes(b"")
    assert binds_for(["profile", str(f), "--json", f"--out={tmp_path}", "--runs", "5"], Path("/")) == [
        Path("/"), tmp_path.resolve(), tmp_path.resolve()]


def test_no_userland_says_how_to_build_one(tmp_path: Path) -> None:
    assert userland.find(tmp_path) is None
    with pytest.raises(UsageError) as err:
        userland.require(tmp_path)
    assert "edgekit emulate setup" in (err.value.hint or "")


def test_the_wheels_are_edgekits_serve_requirements_for_the_userlands_python() -> None:
    reqs = userland.requirements(python="3.11")
    names = {r.split(">")[0].split("=")[0].split("<")[0] for r in reqs}
    assert {"onnxruntime", "ai-edge-litert", "ncnn", "numpy", "starlette", "uvicorn", "psutil"} <= names
    assert not names & {"torch", "tensorflow", "tomli", "edgekit", "openvino"}
    plats = userland.platforms("2.36")
    assert plats[0] == "manylinux_2_36_aarch64" and plats[-1] == "manylinux2014_aarch64"


def test_the_device_extras_are_read_from_the_format_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """serve, and the extra of each format library whose record says it belongs on an Arm64 device: onnxruntime's
    and LiteRT's `runtime`, ncnn's own; OpenVINO's not (x86 boxes). A format registered later adds its own."""
    from edgekit.core.formats import FORMATS, FormatSpec
    from edgekit.core.vendor import Vendor

    assert userland.device_extras() == ("serve", "runtime", "ncnn")
    assert userland.requirements(python="3.11") == userland.requirements(("serve", "runtime", "ncnn"), python="3.11")
    lib = Vendor("armlib", modules={"armlib": "armlib"}, extra="armlib", arm64=True)
    monkeypatch.setitem(FORMATS, "arm", FormatSpec("arm", 9, None, libraries={"armlib": lib}))
    assert userland.device_extras() == ("serve", "runtime", "ncnn", "armlib")


def test_the_record_says_which_extras_its_wheels_are(tmp_path: Path) -> None:
    land = _land(tmp_path, extras=["serve", "runtime"])
    assert land.extras == ("serve", "runtime") and land.to_dict()["extras"] == ["serve", "runtime"]
    assert _land(tmp_path / "older").extras == ()  # a userland recorded before the record said


def test_building_needs_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(UsageError, match="needs root"):
        userland.build(tmp_path / "arm64")
