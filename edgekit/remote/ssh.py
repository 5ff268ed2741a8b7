"""Running a shell line on a device through the system's `ssh`, and nothing left running when we stop.

One call is one `ssh` process. Its stdin stays open until the call ends (`edgekit.remote.shell.watched`
stops the device's side when it closes), stderr is passed on line by line as it comes (the device's
progress lines) and kept for the error message, stdout is the answer.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from edgekit.core.errors import MissingDependency
from edgekit.remote.errors import RemoteRunFailed, classify
from edgekit.remote.host import Remote

SSH_FAILED = 255  # ssh's own exit status for its failures; anything else is the remote command's
# what a device says is shown in the user's terminal: no control character but tab and line ends (an escape
# sequence could clear or retitle the terminal, or hide what came before); valid JSON holds none of them raw
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """TEXT from a device with its control characters shown as '?'."""
    return _CONTROL.sub("?", text)


@dataclass
class Answer:
    """What a call returned: the command's exit status, stdout and stderr."""

    code: int
    stdout: str
    stderr: str


READER_GRACE = 5.0  # seconds the stderr reader is given to reach the end of ssh's output once ssh has ended


def call(remote: Remote, command: str | None, *, flags: tuple[str, ...] = (), feed: Callable[[IO[bytes]], None]
         | None = None, on_line: Callable[[str], None] | None = None, timeout: float | None = None) -> Answer:
    """Run COMMAND on REMOTE; FEED writes stdin (then it is closed), else stdin stays open for the call's life.

    ssh's own failures (exit 255: unreachable, refused) raise their named error; the command's exit status is
    the caller's to read. Ctrl-C (KeyboardInterrupt) ends ssh, and with it the device's side, then propagates.
    """
    argv = remote.ssh_argv(command, *flags)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise MissingDependency("No `ssh` client on this machine: edgekit reaches devices with OpenSSH.",
                                hint="Install it: `sudo apt install openssh-client` (macOS and Windows 10+ ship "
                                "it).") from None
    err: list[str] = []
    reader = threading.Thread(target=_read_lines, args=(proc.stderr, err, on_line), daemon=True)
    reader.start()
    fired: list[bool] = []

    def expire() -> None:
        fired.append(True)
        _stop(proc)

    timer = threading.Timer(timeout, expire) if timeout else None
    if timer is not None:
        timer.start()
    try:
        if feed is not None and proc.stdin is not None:
            try:
                feed(proc.stdin)
                proc.stdin.close()
            except BrokenPipeError:  # the device's side ended first: its status and stderr say why
                pass
        out = proc.stdout.read() if proc.stdout is not None else b""
        proc.wait()
    except BaseException:  # Ctrl-C: close our end, which stops the device's side, then ssh itself
        _stop(proc)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        reader.join(timeout=READER_GRACE)
        _close(proc, skip_stderr=reader.is_alive())
    if fired:
        raise RemoteRunFailed(f"{remote.label}: no answer within {timeout:g} s; the run there was stopped.",
                              hint="Raise the time limit, or check what else runs on the device.")
    answer = Answer(proc.returncode, printable(out.decode(errors="replace")), "".join(err))
    if answer.code == SSH_FAILED:
        raise classify(remote.label, answer.stderr)
    return answer


def _read_lines(stream: IO[bytes] | None, keep: list[str], on_line: Callable[[str], None] | None) -> None:
    if stream is None:
        return
    for raw in iter(stream.readline, b""):
        line = printable(raw.decode(errors="replace"))
        keep.append(line)
        if on_line is not None and line.strip():
            on_line(line.rstrip())


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Close stdin (the device's watcher ends the run), give ssh a moment to pass that on, then end it."""
    try:
        if proc.stdin is not None and not proc.stdin.closed:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _close(proc: subprocess.Popen[bytes], skip_stderr: bool = False) -> None:
    """Close our ends of PROC's pipes. SKIP_STDERR where the reader thread still reads it (something else holds its
    write end open): closing a buffered stream blocks on the lock a reading thread holds, so Ctrl-C would hang there;
    the daemon thread and the pipe go with the process."""
    for stream in (proc.stdin, proc.stdout, None if skip_stderr else proc.stderr):
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass


__all__ = ["SSH_FAILED", "Answer", "call", "printable"]
