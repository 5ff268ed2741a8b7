"""One device for the length of a command: one SSH connection, its facts, its artifact cache, its runs.

`with Device(remote) as dev:` logs in once (an OpenSSH ControlMaster every later call rides on), asks the
device what it is and which edgekit it has, copies artifacts it does not hold yet into its cache, and runs
`edgekit profile --json` there; leaving the block closes the connection.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from edgekit.core.errors import RuntimeFailure, UsageError
from edgekit.core.records import Record
from edgekit.remote import shell
from edgekit.remote.errors import EdgekitMissing, RemoteRunFailed, classify
from edgekit.remote.files import Bundle, bundle, write_tar
from edgekit.remote.host import Remote
from edgekit.remote.ssh import SSH_FAILED, call

NOT_FOUND = 127  # the shell's status for a command it cannot find
INTERRUPTED = (130, 143)  # SIGINT, SIGTERM


@dataclass
class DeviceFacts(Record):
    """What the device said about itself: written into each result measured there (device.remote)."""

    host: str = ""  # as the user named it (user@host:port)
    machine: str = ""  # uname -m: aarch64, x86_64, armv7l ...
    os: str = ""  # uname -sr
    cores: int | None = None
    edgekit_version: str | None = None
    edgekit_command: str = ""  # how edgekit was started there
    local_edgekit_version: str = ""  # this machine's, for comparison
    artifact_path: str | None = None  # where the measured file sits in the device's cache

    def version_note(self) -> str | None:
        """Words for a version mismatch, or None when both ends run the same edgekit."""
        if self.edgekit_version is None or self.edgekit_version == self.local_edgekit_version:
            return None
        return (f"edgekit {self.edgekit_version} measured this on {self.host}; this machine runs edgekit "
                f"{self.local_edgekit_version}: figures and fields may differ between the two versions")


class Device:
    """A context manager around one REMOTE: connect, probe, copy, run; LOG gets progress lines."""

    def __init__(self, remote: Remote, log: Callable[[str], None] | None = None) -> None:
        remote.ssh.check()
        self.remote = remote
        self.log = log or (lambda _m: None)
        self.facts: DeviceFacts | None = None
        self._control: Path | None = None

    # --- the connection ---------------------------------------------------------------------------
    def __enter__(self) -> Device:
        # a short folder: a socket path must stay under ~100 bytes, and %C alone is 40
        self._control = Path(tempfile.mkdtemp(prefix="ek-ssh-", dir="/tmp" if Path("/tmp").is_dir() else None))
        self.remote = replace(self.remote, ssh=replace(self.remote.ssh, control_dir=self._control))
        try:
            self._open_master()
            self.facts = self._probe()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._control is None:
            return
        try:  # a master that does not answer must not hide the error that ended the block
            subprocess.run(self.remote.ssh_argv(None, "-O", "exit"), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=15)
        except (subprocess.TimeoutExpired, OSError):
            pass
        finally:
            shutil.rmtree(self._control, ignore_errors=True)
            self._control = None

    def _open_master(self) -> None:
        """Log in once; later calls share this connection. ssh's errors here are the named ones (unreachable...)."""
        self.log(f"connecting to {self.remote.label}")
        with tempfile.TemporaryFile() as err:  # not a pipe: the backgrounded master must not hold our reader open
            try:
                proc = subprocess.run(self.remote.ssh_argv(None, "-M", "-N", "-f", "-o", "ControlPersist=yes"),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, check=False,
                                      timeout=self.remote.ssh.connect_timeout + 30)
            except FileNotFoundError:
                call(self.remote, "true")  # the same check, and its MissingDependency, in one place
                raise
            except subprocess.TimeoutExpired:
                raise classify(self.remote.label, "timed out") from None
            err.seek(0)
            text = err.read().decode(errors="replace")
        if proc.returncode == SSH_FAILED:
            raise classify(self.remote.label, text)
        if proc.returncode != 0:
            raise RemoteRunFailed(f"ssh to {self.remote.label} failed: {text.strip() or proc.returncode}.")

    # --- what the device is -----------------------------------------------------------------------
    def _probe(self) -> DeviceFacts:
        from edgekit._version import __version__

        words = self.remote.edgekit_argv()
        answer = call(self.remote, shell.probe(words))
        kv: dict[str, list[str]] = {}
        for line in answer.stdout.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                kv.setdefault(key, []).append(value)
        one = {k: v[0] for k, v in kv.items()}
        out = kv.get("edgekit_out", [])
        facts = DeviceFacts(host=self.remote.label, machine=one.get("machine", ""), os=one.get("os", ""),
                            cores=int(one["cores"]) if one.get("cores", "").isdigit() else None,
                            edgekit_command=words, local_edgekit_version=__version__)
        rc = one.get("edgekit_rc", "")
        version = out[-1].split()[-1] if rc == "0" and out and out[-1].startswith("edgekit ") else None
        if version is None:
            raise self._missing(facts, rc, out)
        facts.edgekit_version = version
        self.log(f"{facts.host}: {facts.machine}, {facts.cores} cores, {facts.os}, edgekit {version}")
        return facts

    def _missing(self, facts: DeviceFacts, rc: str, out: list[str]) -> EdgekitMissing | RemoteRunFailed:
        said = " ".join(out[-3:]).strip()
        no_module = "No module named" in said and "edgekit" in said
        if rc != str(NOT_FOUND) and not no_module:
            return RemoteRunFailed(f"edgekit on {facts.host} did not start (`{facts.edgekit_command} --version`, "
                                   f"exit {rc}): {said[:300] or 'no message'}.",
                                   hint="Run that command on the device to see what it needs.")
        where = (f"--remote-python {self.remote.python}" if self.remote.python else
                 f"--remote-edgekit {self.remote.edgekit}" if self.remote.edgekit else "the login shell's PATH")
        return EdgekitMissing(f"No edgekit on {facts.host} ({facts.machine or 'unknown machine'}, {facts.os}) "
                              f"where we looked: {where} ({said[:200] or 'not found'}).",
                              hint=install_line(facts.machine))

    # --- the artifact cache -----------------------------------------------------------------------
    def upload(self, paths: list[Path]) -> dict[Path, str]:
        """Copy each artifact (and its sidecar files) the device does not hold yet; {local path: device path word}."""
        bundles = {p: bundle(p) for p in dict.fromkeys(paths)}
        keys = sorted({b.key for b in bundles.values()})
        held = set()
        if keys:
            answer = call(self.remote, shell.cached(self.remote.cache, keys))
            held = {ln.split("=", 1)[1] for ln in answer.stdout.splitlines() if ln.startswith("cached=")}
        todo = list({b.key: b for b in bundles.values() if b.key not in held}.values())
        if todo:
            size = sum(b.size for b in todo)
            self.log(f"{self.remote.label}: copying {len(todo)} artifact(s), {size / 1e6:.1f} MB, into "
                     f"{self.remote.cache}")
            answer = call(self.remote, shell.store(self.remote.cache), feed=lambda f: write_tar(todo, f))
            if answer.code != 0:
                raise RemoteRunFailed(f"Copying to {self.remote.label}'s cache {self.remote.cache} failed: "
                                      f"{answer.stderr.strip()[-300:] or f'exit {answer.code}'}.",
                                      hint="Check the device's free space and that the cache folder is writable "
                                      "(--remote-cache DIR).")
        if held:
            self.log(f"{self.remote.label}: {len(held & set(keys))} artifact(s) already in its cache")
        return {p: self._path_word(b) for p, b in bundles.items()}

    def _path_word(self, b: Bundle) -> str:
        return shell.path_word(self.remote.cache) + "/" + shlex.quote(f"{b.key}/{b.main}")

    # --- a run ------------------------------------------------------------------------------------
    def profile(self, device_path: str, flags: list[str], timeout: float | None = None) -> dict[str, Any]:
        """`edgekit profile DEVICE_PATH --json FLAGS` on the device; its ProfileResult JSON (a dict).

        RemoteRunFailed with the device's own message (and exit code) when it fails there.
        """
        from edgekit.core.filedoc import parse_json

        words = " ".join([self.remote.edgekit_argv(), "profile", device_path, "--json",
                          *(shlex.quote(f) for f in flags)])
        label = self.remote.label

        def show(line: str) -> None:  # the device's progress lines, not its error lines (raised below)
            if not line.lstrip().startswith(("error:", "hint:", "internal error:")):
                self.log(f"{label}: {line.lstrip('> ').strip()}")

        answer = call(self.remote, shell.watched(words), on_line=show, timeout=timeout)
        if answer.code == 0:
            try:  # the device's answer is hostile input: edgekit's bounded JSON reader, not json.loads
                data = parse_json(answer.stdout, f"edgekit profile's answer from {label}")
            except UsageError:
                data = None
            if isinstance(data, dict):
                return data
            raise RemoteRunFailed(f"edgekit profile on {label} printed no JSON: {answer.stdout.strip()[:200]!r}.")
        if answer.code == NOT_FOUND:
            raise EdgekitMissing(f"edgekit is no longer on {label} ({self.remote.edgekit_argv()}).",
                                 hint=install_line(self.facts.machine if self.facts else ""))
        message, hint = _error_lines(answer.stderr)
        if answer.code in INTERRUPTED:
            message = "the run was stopped on the device"
        known = answer.code if 1 <= answer.code <= 10 else RuntimeFailure.exit_code
        raise RemoteRunFailed(f"edgekit profile failed on {label}: {message}", hint=hint, exit_code=known)


def _error_lines(stderr: str) -> tuple[str, str | None]:
    """The device's `error:` message and `hint:` (a traceback's last line where there is no error line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln.split("error:", 1)[1].strip() for ln in lines if ln.startswith(("error:", "internal error:"))]
    hints = [ln.split("hint:", 1)[1].strip() for ln in lines if ln.startswith("hint:")]
    message = errors[-1] if errors else (lines[-1] if lines else "no message")
    return message[:500], (hints[-1] if hints else None)


def install_line(machine: str) -> str:
    """How to install edgekit's runtimes on a device of MACHINE (uname -m), and how to point edgekit at it."""
    m = machine.lower()
    venv = "python3 -m venv ~/edgekit && ~/edgekit/bin/pip install 'edgekit[runtime]'"
    then = "then pass --remote-python ~/edgekit/bin/python."
    if m in ("aarch64", "arm64"):
        return f"On the device (64-bit Arm: onnxruntime and LiteRT publish aarch64 wheels): {venv}; {then}"
    if m in ("x86_64", "amd64"):
        return f"On the device (x86-64): {venv} (add ,openvino for Intel hardware); {then}"
    if m.startswith("armv"):
        return (f"This device runs a 32-bit Arm OS ({machine}): onnxruntime and LiteRT publish no wheels for it. "
                f"Install a 64-bit OS (Raspberry Pi OS 64-bit), then: {venv}; {then}")
    return f"On the device: {venv} (runtime wheels may not exist for {machine or 'its architecture'}); {then}"


__all__ = ["Device", "DeviceFacts", "install_line"]
