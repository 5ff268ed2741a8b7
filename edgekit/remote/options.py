"""The --remote options `edgekit profile` and `edgekit bench` share, declared once, and the Remotes they make."""

from __future__ import annotations

from pathlib import Path

import typer

from edgekit.remote.host import HostSpec, Remote, SshSettings

REMOTE = typer.Option(None, "--remote", help="Measure on this device over SSH instead: user@host[:port] or a Host "
                      "alias of your ssh config (system OpenSSH, your keys, BatchMode: never a password).")
REMOTE_PYTHON = typer.Option(None, "--remote-python", help="The device's Python that has edgekit (a venv's, e.g. "
                             "~/edgekit/bin/python); default: `edgekit` on the device's PATH.")
REMOTE_EDGEKIT = typer.Option(None, "--remote-edgekit", help="The edgekit command on the device, if not on its "
                              "PATH (e.g. ~/.local/bin/edgekit).")
REMOTE_CACHE = typer.Option("~/.cache/edgekit/remote", "--remote-cache", help="The device's folder for copied "
                            "artifacts, one per sha256 (copied once, reused).")
SSH_CONFIG = typer.Option(None, "--ssh-config", help="An ssh config file to use instead of ~/.ssh/config (ssh -F).")
IDENTITY = typer.Option(None, "--identity", "-i", help="The private key to log in with (ssh -i).")
SSH_OPTION = typer.Option(None, "--ssh-option", help="An `ssh -o` option KEY=VALUE (repeat), e.g. "
                          "StrictHostKeyChecking=accept-new.")
CONNECT_TIMEOUT = typer.Option(10, "--connect-timeout", help="Seconds to wait for a device's SSH server.")


def remotes(hosts: list[str] | None, python: str | None = None, edgekit: str | None = None,
            cache: str = "~/.cache/edgekit/remote", ssh_config: Path | None = None, identity: Path | None = None,
            ssh_option: list[str] | None = None, connect_timeout: int = 10) -> list[Remote]:
    """One Remote per --remote host (in order, each once), all reached and run the same way; [] for none."""
    ssh = SshSettings(config=ssh_config, identity=identity, options=tuple(ssh_option or ()),
                      connect_timeout=connect_timeout)
    specs = list(dict.fromkeys(HostSpec.parse(h) for h in hosts or []))
    if specs:
        ssh.check()
    return [Remote(spec=s, ssh=ssh, python=python, edgekit=edgekit, cache=cache) for s in specs]


__all__ = ["CONNECT_TIMEOUT", "IDENTITY", "REMOTE", "REMOTE_CACHE", "REMOTE_EDGEKIT", "REMOTE_PYTHON", "SSH_CONFIG",
           "SSH_OPTION", "remotes"]
