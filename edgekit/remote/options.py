"""The --remote options `edgekit profile` and `edgekit bench` share, declared once, and the Remotes they make.

`RemoteOptions` is one dataclass of declared options (edgekit.core.option_field) that both commands'
options inherit, so each flag, its help and its default are written here only; the defaults are the
ones the records they fill hold (Remote's cache, SshSettings' connect timeout).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edgekit.core.option_field import option
from edgekit.remote.host import HostSpec, Remote, SshSettings


@dataclass
class RemoteOptions:
    """How to reach the devices --remote names, and the edgekit to run on them."""

    remote: list[str] | None = option(None, "Measure on this device over SSH instead: user@host[:port] or a Host "
                                      "alias of your ssh config (system OpenSSH, your keys, BatchMode: never a "
                                      "password).", flags=("--remote",))
    remote_python: str | None = option(None, "The device's Python that has edgekit (a venv's, e.g. "
                                       "~/edgekit/bin/python); default: `edgekit` on the device's PATH.",
                                       flags=("--remote-python",))
    remote_edgekit: str | None = option(None, "The edgekit command on the device, if not on its PATH (e.g. "
                                        "~/.local/bin/edgekit).", flags=("--remote-edgekit",))
    remote_cache: str = option(Remote.cache, "The device's folder for copied artifacts, one per sha256 (copied "
                               "once, reused).", flags=("--remote-cache",))
    ssh_config: Path | None = option(None, "An ssh config file to use instead of ~/.ssh/config (ssh -F).",
                                     flags=("--ssh-config",))
    identity: Path | None = option(None, "The private key to log in with (ssh -i).", flags=("--identity", "-i"))
    ssh_option: list[str] | None = option(None, "An `ssh -o` option KEY=VALUE (repeat), e.g. "
                                          "StrictHostKeyChecking=accept-new.", flags=("--ssh-option",))
    connect_timeout: int = option(SshSettings.connect_timeout, "Seconds to wait for a device's SSH server.",
                                  flags=("--connect-timeout",))

    def remotes(self) -> list[Remote]:
        """One Remote per --remote host (in order, each once), all reached and run as these options say."""
        return remotes(self.remote, self.remote_python, self.remote_edgekit, self.remote_cache, self.ssh_config,
                       self.identity, self.ssh_option, self.connect_timeout)


def remotes(hosts: list[str] | None, python: str | None = None, edgekit: str | None = None,
            cache: str = Remote.cache, ssh_config: Path | None = None, identity: Path | None = None,
            ssh_option: list[str] | None = None, connect_timeout: int = SshSettings.connect_timeout) -> list[Remote]:
    """One Remote per --remote host (in order, each once), all reached and run the same way; [] for none."""
    ssh = SshSettings(config=ssh_config, identity=identity, options=tuple(ssh_option or ()),
                      connect_timeout=connect_timeout)
    specs = list(dict.fromkeys(HostSpec.parse(h) for h in hosts or []))
    if specs:
        ssh.check()
    return [Remote(spec=s, ssh=ssh, python=python, edgekit=edgekit, cache=cache) for s in specs]


__all__ = ["RemoteOptions", "remotes"]
