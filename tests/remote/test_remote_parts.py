"""The remote pieces without a network: host specs, the ssh command line, error naming, what gets copied."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from edgekit.core.errors import EXIT_MISSING, EXIT_USAGE, UsageError
from edgekit.remote import shell
from edgekit.remote.device import Device, DeviceFacts, install_line
from edgekit.remote.errors import AuthRefused, HostUnreachable, RemoteRunFailed, classify
from edgekit.remote.files import bundle, write_tar
from edgekit.remote.host import HostSpec, Remote, SshSettings
from edgekit.testing.onnx_graphs import tiny_onnx


@pytest.mark.parametrize(("spec", "host", "user", "port"), [
    ("pi@raspberrypi.local", "raspberrypi.local", "pi", None),
    ("pi@10.0.0.7:2222", "10.0.0.7", "pi", 2222),
    ("ssh://pi@[fe80::1]:22", "fe80::1", "pi", 22),
    ("my-pi", "my-pi", None, None),
])
def test_host_specs_read_as_ssh_reads_them(spec: str, host: str, user: str | None, port: int | None) -> None:
    h = HostSpec.parse(spec)
    assert (h.host, h.user, h.port) == (host, user, port)
    assert HostSpec.parse(str(h)) == h


@pytest.mark.parametrize("spec", ["-oProxyCommand=touch /tmp/x", "pi@-oProxyCommand=x", "pi@host:99999",
                                  "pi@host;reboot", "pi@ho st", ""])
def test_a_host_spec_that_is_not_one_is_bad_input(spec: str) -> None:
    with pytest.raises(UsageError) as err:
        HostSpec.parse(spec)
    assert err.value.exit_code == EXIT_USAGE and err.value.hint


def test_the_ssh_line_never_asks_for_a_password_and_ends_options_before_the_host(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("k")
    r = Remote(HostSpec.parse("pi@pi5:2222"), SshSettings(identity=key, options=("StrictHostKeyChecking=yes",)))
    argv = r.ssh_argv("true")
    assert argv[0] == "ssh" and "BatchMode=yes" in argv and argv[argv.index("-p") + 1] == "2222"
    assert argv[argv.index("-i") + 1] == str(key) and argv[argv.index("-l") + 1] == "pi"
    assert argv[-3:] == ["--", "pi5", "true"]
    with pytest.raises(UsageError):
        SshSettings(options=("no-equals-sign",)).check()
    with pytest.raises(UsageError):
        SshSettings(config=tmp_path / "missing").check()


def test_the_device_side_edgekit_and_home_paths_are_quoted_for_its_shell() -> None:
    assert shell.path_word("~/venv/bin/python") == '"$HOME"/venv/bin/python'
    assert shell.path_word("/opt/my venv/python") == "'/opt/my venv/python'"
    r = Remote(HostSpec.parse("pi@pi"), python="~/edgekit/bin/python")
    assert r.edgekit_argv() == '"$HOME"/edgekit/bin/python -m edgekit.cli'
    assert Remote(HostSpec.parse("pi")).edgekit_argv() == "edgekit"
    line = shell.cached("~/c", ["abc"])
    out = subprocess.run(["sh", "-c", line], capture_output=True, text=True, env={"HOME": "/nonexistent"})
    assert out.returncode == 0 and out.stdout == ""


@pytest.mark.parametrize(("stderr", "kind", "code"), [
    ("ssh: connect to host 127.0.0.1 port 1: Connection refused", HostUnreachable, EXIT_MISSING),
    ("ssh: Could not resolve hostname nosuch: Name or service not known", HostUnreachable, EXIT_MISSING),
    ("pi@10.0.0.7: Permission denied (publickey,password).", AuthRefused, EXIT_USAGE),
    ("Host key verification failed.", AuthRefused, EXIT_USAGE),
    ("something else entirely", RemoteRunFailed, 6),
])
def test_ssh_failures_are_named_for_what_to_fix(stderr: str, kind: type, code: int) -> None:
    err = classify("pi@pi", stderr)
    assert type(err) is kind and err.exit_code == code and "pi@pi" in err.message and err.hint


def test_the_install_line_fits_the_device_architecture() -> None:
    assert "aarch64 wheels" in install_line("aarch64") and "pip install 'edgekit[runtime]'" in install_line("aarch64")
    assert "64-bit OS" in install_line("armv7l") and "--remote-python" in install_line("x86_64")


def test_versions_that_differ_say_so() -> None:
    same = DeviceFacts(host="pi", edgekit_version="0.1.0", local_edgekit_version="0.1.0")
    assert same.version_note() is None
    other = DeviceFacts(host="pi", edgekit_version="0.0.9", local_edgekit_version="0.1.0")
    assert "0.0.9" in (other.version_note() or "") and "0.1.0" in (other.version_note() or "")


def test_an_onnx_model_travels_with_its_external_data_and_nothing_else(tmp_path: Path) -> None:
    model = tiny_onnx(tmp_path / "m" / "net.onnx", external=True)
    (tmp_path / "m" / "unrelated.txt").write_text("stays here")
    b = bundle(model)
    assert b.files == ("net.onnx", "net.onnx.data") and b.main == "net.onnx" and len(b.key) == 64
    buf = io.BytesIO()
    write_tar([b], buf)
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar:
        names = tar.getnames()
    assert sorted(names) == sorted(f"{b.key}/{n}" for n in ("net.onnx", "net.onnx.data", "SHA256SUMS"))


def test_an_openvino_ir_travels_with_its_weights_and_a_single_file_is_keyed_by_its_sha256(tmp_path: Path) -> None:
    from edgekit.core.fsutil import sha256_file

    (tmp_path / "m.xml").write_text("<net/>")
    (tmp_path / "m.bin").write_bytes(b"\0" * 8)
    assert bundle(tmp_path / "m.xml").files == ("m.xml", "m.bin")
    (tmp_path / "m.tflite").write_bytes(b"TFL3")
    assert bundle(tmp_path / "m.tflite").key == sha256_file(tmp_path / "m.tflite")


def test_a_folder_travels_without_what_its_links_point_at(tmp_path: Path) -> None:
    sm = tmp_path / "saved"
    (sm / "variables").mkdir(parents=True)
    (sm / "saved_model.pb").write_bytes(b"pb")
    (sm / "variables" / "variables.index").write_bytes(b"ix")
    secret = tmp_path / "secret"
    secret.write_text("not for the device")
    (sm / "link").symlink_to(secret)
    assert bundle(sm).files == ("saved/saved_model.pb", "saved/variables/variables.index")


def test_external_data_outside_the_model_folder_is_refused(tmp_path: Path) -> None:
    import onnx

    model = tiny_onnx(tmp_path / "a" / "net.onnx", external=True)
    proto = onnx.load(str(model), load_external_data=False)
    for t in proto.graph.initializer:
        for entry in t.external_data:
            if entry.key == "location":
                entry.value = "../outside.data"
    (tmp_path / "outside.data").write_bytes((tmp_path / "a" / "net.onnx.data").read_bytes())
    onnx.save(proto, str(model))
    with pytest.raises(UsageError, match="outside its own folder"):
        bundle(model)


def test_closing_a_connection_whose_master_hangs_hides_no_error(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def hangs(argv: list[str], **_kw: object) -> None:
        raise subprocess.TimeoutExpired(argv, 15)

    monkeypatch.setattr(subprocess, "run", hangs)
    dev = Device(Remote(HostSpec.parse("pi@pi")))
    control = tmp_path / "ctl"
    control.mkdir()
    dev._control = control
    dev.__exit__(RuntimeError, RuntimeError("the run failed"), None)  # raises nothing of its own
    assert not control.exists() and dev._control is None


def test_a_device_answering_json_nested_beyond_reason_is_a_failed_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.remote import device
    from edgekit.remote.ssh import Answer

    deep = "[" * 100_000 + "]" * 100_000  # json.loads: RecursionError, a crash rather than an answer
    monkeypatch.setattr(device, "call", lambda *_a, **_k: Answer(0, deep, ""))
    with pytest.raises(RemoteRunFailed, match="printed no JSON"):
        Device(Remote(HostSpec.parse("pi@pi"))).profile("model.onnx", [])


def test_what_a_device_says_reaches_the_terminal_without_escape_sequences() -> None:
    from edgekit.remote.ssh import _read_lines, printable

    said: list[str] = []
    kept: list[str] = []
    _read_lines(io.BytesIO(b"> loading\x1b[2J\x1bc\n\xc2\x9b31m\ttab kept\r\n"), kept, said.append)
    assert said == ["> loading?[2J?c", "?31m\ttab kept"] and "\x1b" not in "".join(kept)
    assert printable('{"a": 1}\n') == '{"a": 1}\n'  # JSON's whitespace survives


def test_a_call_returns_when_something_else_keeps_ssh_stderr_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Closing a pipe that the stderr reader thread still reads blocks on its lock (seen once in CI: Ctrl-C of a
    remote profile never returned); a call whose ssh left a process holding stderr open returns all the same."""
    import threading
    import time
    from types import SimpleNamespace

    from edgekit.remote import ssh

    monkeypatch.setattr(ssh, "READER_GRACE", 0.3)
    holder = "(sleep 5 >/dev/null) & echo answered"  # the background sleep keeps the call's stderr open
    fake = SimpleNamespace(label="fake-device", ssh_argv=lambda command, *flags: ["sh", "-c", holder])
    got: list[ssh.Answer] = []
    worker = threading.Thread(target=lambda: got.append(ssh.call(fake, "ignored")), daemon=True)  # type: ignore[arg-type]
    start = time.monotonic()
    worker.start()
    worker.join(15)
    assert got, "ssh.call hung closing a pipe its reader thread still reads"
    assert got[0].code == 0 and got[0].stdout.strip() == "answered" and time.monotonic() - start < 15
