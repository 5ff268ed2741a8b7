"""`edgekit profile/bench --remote` against a real sshd on 127.0.0.1 (tests/remote/sshd.py), end to end.

The command runs in this process (edgekit.cli.main); the device's side is a real `ssh` login running
`edgekit profile --json` in its own process. Skipped, with the reason, where no sshd can be started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_MISSING, EXIT_USAGE
from edgekit.measure.bench_report import BenchReport
from edgekit.measure.profile import ProfileResult
from edgekit.testing.onnx_graphs import tiny_onnx
from tests.remote import sshd

pytestmark = pytest.mark.slow  # each remote run starts a Python and edgekit on the device side: seconds
QUICK = ["--runs", "5", "--min-seconds", "0", "--warmup", "1"]


def _profile(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["profile", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_profile_on_a_device_copies_the_model_once_and_labels_the_result(
        server: sshd.Sshd, remote_args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tiny_onnx(tmp_path / "m" / "net.onnx", external=True)
    code, out, err = _profile([str(model), "--remote", "edgekit-test-device", *remote_args, "--json", *QUICK], capsys)
    assert code == 0, err
    data = json.loads(out)
    local = main(["profile", str(model), "--json", *QUICK])
    local_data = json.loads(capsys.readouterr().out)
    assert local == 0 and set(data) == set(local_data)  # the same schema as a local run
    result = ProfileResult.from_dict(data)
    assert result.latency_ms.p50 > 0 and result.runs >= 5 and result.artifact.path == str(model)
    facts = data["device"]["remote"]
    assert facts["host"] == "edgekit-test-device" and facts["machine"] and facts["cores"] >= 1
    assert facts["edgekit_version"] == facts["local_edgekit_version"] and not result.notes
    cache = tmp_path / "device-cache"
    [held] = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert sorted(p.name for p in held.iterdir()) == [".complete", "SHA256SUMS", "net.onnx", "net.onnx.data"]
    assert "copying 1 artifact" in err
    code, out, err = _profile([str(model), "--remote", "edgekit-test-device", *remote_args, *QUICK], capsys)
    assert code == 0 and "already in its cache" in err and "copying" not in err
    flat = "".join(c for c in out if not c.isspace() and c != "│")  # the table, wrapped to the terminal's width
    assert "measuredonedgekit-test-device(" in flat  # the table says where it ran


def test_bench_on_two_devices_gives_one_row_set_per_device(
        server: sshd.Sshd, remote_args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "run"
    tiny_onnx(folder / "a.fp32.onnx")
    tiny_onnx(folder / "b.fp32.onnx", external=True)
    hosts = ["edgekit-test-device", server.spec]  # an alias of the ssh config, and user@127.0.0.1:port
    code = main(["bench", str(folder), "--out", str(tmp_path / "out"), "--runtime", "onnxruntime", "--no-source",
                 "--in-process",
                 *[w for h in hosts for w in ("--remote", h)], *remote_args, *QUICK])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = BenchReport.read(tmp_path / "out" / "bench.json")
    by_host: dict[str | None, list[str]] = {}
    for row in report.rows:
        assert row.status == "ok" and row.p50_ms and row.speedup, row
        by_host.setdefault(row.host, []).append(row.label)
    assert set(by_host) == {None, *hosts} and all(len(v) == 2 for v in by_host.values())
    assert [h["host"] for h in report.hosts] == hosts and all(h["reference"]["p50_ms"] > 0 for h in report.hosts)
    measured_on = [r.device.host.get("remote", {}).get("host") for r in report.results]
    assert sorted(measured_on, key=str) == sorted([None, None, *hosts, *hosts], key=str)
    md = (tmp_path / "out" / "bench.md").read_text()
    assert "| Host |" in md and f"| {server.spec} |" in md and "Device edgekit-test-device:" in md
    assert "Host" in captured.out


def test_a_device_without_edgekit_says_how_to_install_it(
        server: sshd.Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tiny_onnx(tmp_path / "net.onnx")
    base = ["--ssh-config", str(server.config), "--remote-cache", str(tmp_path / "c")]
    # a Python without edgekit (the system's), then no edgekit on the login PATH at all
    for extra in (["--remote-python", sys.base_prefix + "/bin/python3"], ["--remote-edgekit", "no-such-edgekit"]):
        code, _, err = _profile([str(model), "--remote", "edgekit-test-device", *base, *extra], capsys)
        assert code == EXIT_MISSING, err
        assert "No edgekit on edgekit-test-device" in err and "pip install 'edgekit[runtime]'" in err
        assert "Traceback" not in err


def test_a_refused_key_and_an_unreachable_port_are_named(
        server: sshd.Sshd, remote_args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tiny_onnx(tmp_path / "net.onnx")
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    config = tmp_path / "config"
    config.write_text(server.config.read_text().replace(str(server.key), str(stranger)))
    args = [a if a != str(server.config) else str(config) for a in remote_args]
    code, _, err = _profile([str(model), "--remote", "edgekit-test-device", *args], capsys)
    assert code == EXIT_USAGE and "refused our key" in err and "ssh-copy-id" in err, err
    code, _, err = _profile([str(model), "--remote", f"{server.user}@127.0.0.1:{sshd.free_port()}", *remote_args],
                            capsys)
    assert code == EXIT_MISSING and "unreachable" in err and "Connection refused" in err, err


def test_a_failing_run_on_the_device_gives_its_message_not_a_traceback(
        server: sshd.Sshd, remote_args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import onnx
    from onnx import TensorProto, helper

    # a well-formed ONNX file (it copies) with an op no runtime has: onnxruntime refuses it on the device
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("x", "y")]
    graph = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"])], "g", info[:1], info[1:])
    bad = tmp_path / "unknown_op.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(bad))
    code, _, err = _profile([str(bad), "--remote", "edgekit-test-device", *remote_args], capsys)
    assert code == 6 and "edgekit profile failed on edgekit-test-device:" in err, err
    assert "NoSuchOp" in err and "Traceback" not in err


def test_a_version_that_differs_on_the_device_is_noted(
        server: sshd.Sshd, remote_args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrapper = tmp_path / "old-edgekit"
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "edgekit 0.0.9"; exit 0; }}\n'
                       f'exec {sys.executable} -m edgekit.cli "$@"\n')
    wrapper.chmod(0o755)
    args = [a for a in remote_args if a != sys.executable and a != "--remote-python"]
    code, out, err = _profile([str(tiny_onnx(tmp_path / "net.onnx")), "--remote", "edgekit-test-device",
                               "--remote-edgekit", str(wrapper), *args, "--json", *QUICK], capsys)
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert any("edgekit 0.0.9 measured this" in n for n in notes)


def _device_runs(marker: str) -> list[int]:
    """Processes whose command line holds MARKER (the test's own cache folder): the device's edgekit."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker + "/" in cmd and "edgekit.cli profile" in cmd:  # the cached artifact, not --remote-cache
                pids.append(int(entry.name))
    return pids


def test_ctrl_c_stops_the_run_on_the_device(server: sshd.Sshd, remote_args: list[str], tmp_path: Path) -> None:
    model = tiny_onnx(tmp_path / "net.onnx")
    marker = str(tmp_path / "device-cache")
    # Ctrl-C interrupts, as at a terminal: a suite started as a shell's background job (`(... &)`, a CI runner's) runs
    # with SIGINT ignored, which a child inherits through exec, and a Python started so never raises KeyboardInterrupt
    # (both clean-clone runs of 2026-11-28 started so hung here; tests/conversion/test_outdir.py's child does the same)
    proc = subprocess.Popen([sys.executable, "-m", "edgekit.cli", "profile", str(model), "--remote",
                             "edgekit-test-device", *remote_args, "--min-seconds", "120"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while not _device_runs(marker) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert _device_runs(marker), "the run never started on the device"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    deadline = time.monotonic() + 10
    while _device_runs(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _device_runs(marker), "the device's edgekit is still running"
