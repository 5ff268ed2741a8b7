"""Our edgetpu_compiler invocation, timeout and error handling, with a stand-in for the compiler.

The stand-in (edgetpu_standin.py) prints recorded outputs of real compiler runs (see
tests/fixtures/edgetpu/README.md); these tests check edgekit's side, not the compiler.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from edgetpu_standin import FIX, write_standin
from tflite_builder import conv_chain

from edgekit.core.errors import ConversionError, NotAvailable, UsageError
from edgekit.edgetpu import compile_model, find_compiler, how_to_finish


@pytest.fixture
def standin(tmp_path, monkeypatch) -> Path:
    exe = write_standin(tmp_path / "bin" / "edgetpu_compiler")
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv.txt"))
    monkeypatch.setenv("FAKE_STDOUT", str(FIX / "reconstructed_v16_mnist_all_mapped_stdout.txt"))
    return exe


@pytest.fixture
def model(tmp_path) -> Path:
    return conv_chain(tmp_path / "mnist_int8.tflite")


def test_successful_compile_and_our_invocation(standin, model, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_LOG", str(FIX / "nrf20_mnist7_edgetpu.log"))
    out = tmp_path / "out"
    r = compile_model(model, out, compiler=standin, min_runtime_version=13, timeout=90)
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[0] == "-s" and argv[-1] == str(model.resolve())
    assert argv[argv.index("-m") + 1] == "13"
    assert argv[argv.index("--timeout_sec") + 1] == "90"
    staged = Path(argv[argv.index("-o") + 1])
    assert staged.parent == out and not staged.exists()  # compiled into a scratch folder, then published
    assert Path(r.compiled_path) == out / "mnist_int8_edgetpu.tflite"
    assert Path(r.compiled_path).read_bytes() == model.read_bytes()
    assert Path(r.log_path).read_text() == (FIX / "nrf20_mnist7_edgetpu.log").read_text()
    rep = r.report
    assert rep.success is True and rep.compiler_version == "16.0.384591198"
    assert (rep.ops_on_tpu, rep.ops_on_cpu, rep.subgraphs) == (8, 0, 1)
    assert rep.on_chip_memory_bytes == 18944 and rep.off_chip_memory_bytes == 0
    assert r.seconds >= 0 and sorted(p.name for p in out.iterdir()) == [
        "mnist_int8_edgetpu.log",
        "mnist_int8_edgetpu.tflite",
    ]


def test_old_compiler_gets_no_timeout_flag_and_stdout_is_kept_as_log(standin, model, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_VERSION", "15.0.340273435")
    monkeypatch.setenv("FAKE_STDOUT", str(FIX / "coral_edgetpu_issue393_stdout.txt"))
    r = compile_model(model, tmp_path / "out", compiler=standin)
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert "--timeout_sec" not in argv and "-m" not in argv
    assert (r.report.ops_on_tpu, r.report.ops_on_cpu) == (117, 48)
    assert Path(r.log_path).read_text() == (FIX / "coral_edgetpu_issue393_stdout.txt").read_text()


def test_compiler_found_on_path(standin, monkeypatch):
    monkeypatch.setenv("PATH", str(standin.parent))
    assert find_compiler() == standin


def test_no_compiler_says_how_to_finish(model, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing named edgetpu_compiler here
    assert find_compiler() is None
    with pytest.raises(NotAvailable) as ei:
        compile_model(model, tmp_path / "out", min_runtime_version=14)
    hint = ei.value.hint
    assert hint == how_to_finish("mnist_int8.tflite", 14)
    assert "docker build --target edgetpu" in hint and "-m 14" in hint
    assert "apt-get install edgetpu-compiler" in hint and "coral-edgetpu-stable main" in hint
    assert ei.value.exit_code == 3
    assert not (tmp_path / "out").exists()


def test_failure_carries_the_compilers_reason(standin, model, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "fail")
    monkeypatch.setenv("FAKE_STDOUT", str(FIX / "coral_edgetpu_issue512_large_activations.txt"))
    with pytest.raises(ConversionError) as ei:
        compile_model(model, tmp_path / "out", compiler=standin)
    assert "large activation tensors" in ei.value.message
    assert "input resolution" in ei.value.hint
    assert list((tmp_path / "out").iterdir()) == []  # no half output, no scratch folder left


def test_success_message_without_a_model_is_a_failure(standin, model, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "nomodel")
    with pytest.raises(ConversionError, match="wrote no compiled model"):
        compile_model(model, tmp_path / "out", compiler=standin)


def test_timeout_kills_the_compiler_and_its_child(standin, model, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "hang")
    monkeypatch.setenv("FAKE_VERSION", "15.0.340273435")  # no --timeout_sec, so no grace period
    monkeypatch.setenv("FAKE_CHILD", str(tmp_path / "child.pid"))
    t0 = time.monotonic()
    with pytest.raises(ConversionError, match="did not finish within 2 s"):
        compile_model(model, tmp_path / "out", compiler=standin, timeout=2)
    assert time.monotonic() - t0 < 10
    pid = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
            if state == "Z":
                break  # killed, waiting to be reaped by its new parent
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the compiler's child process {pid} survived the timeout")


def test_explicit_compiler_must_exist_and_be_executable(standin, model, tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        compile_model(model, tmp_path / "out", compiler=tmp_path / "nope" / "edgetpu_compiler")
    standin.chmod(0o644)
    with pytest.raises(UsageError, match="not an executable") as ei:
        compile_model(model, tmp_path / "out", compiler=standin)
    assert "chmod +x" in ei.value.hint
