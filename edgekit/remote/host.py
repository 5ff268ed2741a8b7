"""Who to reach and how: a host spec (user@host[:port]) and the OpenSSH command lines that reach it.

edgekit speaks SSH through the system's own `ssh` client, so the user's keys, agent and `~/.ssh/config`
(Host aliases, ProxyJump, IdentityFile) work as they do in a terminal. It never asks for or stores a
password: every call runs with `-o BatchMode=yes`, so a host that wants one is an "auth refused" error.
Calls to one host share one connection (ControlMaster), so a bench of twenty rows logs in once.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from edgekit.core.errors import UsageError

_USER = r"[A-Za-z0-9._][A-Za-z0-9._-]*"
_NAME = r"[A-Za-z0-9_][A-Za-z0-9._-]*"  # a host name, an IPv4 address or a ~/.ssh/config alias
_SPEC = re.compile(rf"^(?:ssh://)?(?:(?P<user>{_USER})@)?(?:(?P<name>{_NAME})|\[(?P<v6>[0-9A-Fa-f:.]+)\])"
                   r"(?::(?P<port>\d{1,5}))?/?$")
_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9]*=\S.*$")


@dataclass(frozen=True)
class HostSpec:
    """A device as the user named it: `pi@raspberrypi.local`, `pi@10.0.0.7:2222`, `ssh://pi@[fe80::1]:22`,
    or a bare Host alias of the ssh config (its user, port and key come from there)."""

    host: str
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, spec: str) -> HostSpec:
        """SPEC as a HostSpec; UsageError for anything else (an option smuggled in as a host included)."""
        m = _SPEC.match(spec.strip())
        if not m or spec.strip().startswith("-"):
            raise UsageError(f"--remote '{spec}' is not a host: expected user@host[:port] (or a Host alias of your "
                             "ssh config).", hint="For example: --remote pi@raspberrypi.local or --remote "
                             "pi@192.168.1.20:2222")
        port = int(m["port"]) if m["port"] else None
        if port is not None and not 0 < port < 65536:
            raise UsageError(f"--remote '{spec}': port {port} is out of range.", hint="Ports run from 1 to 65535.")
        return cls(host=m["name"] or m["v6"], user=m["user"], port=port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return (f"{self.user}@" if self.user else "") + host + (f":{self.port}" if self.port else "")


@dataclass(frozen=True)
class SshSettings:
    """How to call ssh: the config file (-F), a key (-i), extra -o options, and how long to wait for a host.

    Defaults: the user's own ~/.ssh/config and keys. `options` are KEY=VALUE pairs as `ssh -o` takes them.
    """

    config: Path | None = None
    identity: Path | None = None
    options: tuple[str, ...] = ()
    connect_timeout: int = 10
    control_dir: Path | None = None  # where the shared connection's socket lives; None: one connection per call

    def check(self) -> None:
        """UsageError for a config or key file that is not there, or an option that is not KEY=VALUE."""
        for flag, path in (("--ssh-config", self.config), ("--identity", self.identity)):
            if path is not None and not Path(path).expanduser().is_file():
                raise UsageError(f"{flag} {path}: no such file.", hint=f"Pass an existing file to {flag}.")
        for opt in self.options:
            if not _OPTION.match(opt):
                raise UsageError(f"--ssh-option '{opt}' is not KEY=VALUE as `ssh -o` takes it.",
                                 hint="For example: --ssh-option StrictHostKeyChecking=accept-new")
        if self.connect_timeout < 1:
            raise UsageError(f"--connect-timeout must be at least 1 second, got {self.connect_timeout}.")


@dataclass(frozen=True)
class Remote:
    """One device to measure on, and the edgekit installation there to run."""

    spec: HostSpec
    ssh: SshSettings = field(default_factory=SshSettings)
    python: str | None = None  # run `PYTHON -m edgekit.cli` (a venv's python on the device)
    edgekit: str | None = None  # or this edgekit command; neither: `edgekit` on the device's PATH
    cache: str = "~/.cache/edgekit/remote"  # where artifacts are kept on the device, one folder per sha256

    def ssh_argv(self, command: str | None, *flags: str) -> list[str]:
        """The `ssh` command line (with FLAGS) that runs COMMAND (a POSIX shell line) on the device.

        `ssh` sends the command to the remote shell as one string; every value in it is quoted by the callers
        (edgekit.remote.shell). `--` ends ssh's options before the host, and HostSpec refuses a leading '-'.
        """
        s = self.ssh
        argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={s.connect_timeout}",
                "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "-o", "LogLevel=ERROR"]
        if s.config is not None:
            argv += ["-F", str(Path(s.config).expanduser())]
        if s.identity is not None:
            argv += ["-i", str(Path(s.identity).expanduser()), "-o", "IdentitiesOnly=yes"]
        if self.spec.port:
            argv += ["-p", str(self.spec.port)]
        if self.spec.user:
            argv += ["-l", self.spec.user]
        if s.control_dir is not None:  # %C: a hash of host, port and user, short enough for a socket path
            argv += ["-o", f"ControlPath={s.control_dir}/%C"]
        for opt in s.options:
            argv += ["-o", opt]
        return [*argv, *flags, "--", self.spec.host, *([command] if command is not None else [])]

    def edgekit_argv(self) -> str:
        """The shell words that start edgekit on the device."""
        from edgekit.remote.shell import path_word

        if self.python:
            return f"{path_word(self.python)} -m edgekit.cli"
        if self.edgekit:
            return " ".join(path_word(w) for w in shlex.split(self.edgekit))
        return "edgekit"

    @property
    def label(self) -> str:
        return str(self.spec)


__all__ = ["HostSpec", "Remote", "SshSettings"]
