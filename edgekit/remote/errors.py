"""The errors of a remote measurement, each named for what the user has to fix.

ssh exits 255 for its own failures and with the remote command's status otherwise; `classify` reads
ssh's stderr to tell an unreachable host from a refused key, so the message says which it is.
"""

from __future__ import annotations

from edgekit.core.errors import EXIT_RUNTIME, MissingDependency, NotAvailable, RuntimeFailure, UsageError


class HostUnreachable(NotAvailable):
    """No SSH server answered: wrong name or port, the device is off, or a firewall is in the way."""


class AuthRefused(UsageError):
    """The SSH server answered but did not let us in without a password (BatchMode), or its host key is unknown."""


class EdgekitMissing(MissingDependency):
    """The device has no edgekit where we looked (its PATH, --remote-python, --remote-edgekit)."""


class RemoteRunFailed(RuntimeFailure):
    """edgekit ran on the device and failed: its own message, and its exit code where it is one of edgekit's."""

    def __init__(self, message: str, hint: str | None = None, exit_code: int = EXIT_RUNTIME) -> None:
        super().__init__(message, hint)
        self.exit_code = exit_code


_UNREACHABLE = ("connection refused", "could not resolve hostname", "no route to host", "timed out",
                "network is unreachable", "connection closed by", "connection reset", "kex_exchange_identification",
                "name or service not known", "temporary failure in name resolution")


def classify(host: str, stderr: str) -> UsageError | NotAvailable | RuntimeFailure:
    """The error for an ssh call to HOST that exited 255 with STDERR (ssh's own failure, not the command's)."""
    text = " ".join(stderr.split())
    low = text.lower()
    why = _last_lines(stderr)
    if "host key verification failed" in low or "remote host identification has changed" in low:
        return AuthRefused(f"{host}: ssh does not know this host's key ({why}).",
                           hint=f"Connect once with `ssh {host}` and check the fingerprint, so the key is in your "
                           "known_hosts (edgekit never accepts a key for you).")
    if "permission denied" in low or "too many authentication failures" in low:
        return AuthRefused(f"{host}: the SSH server refused our key ({why}). edgekit logs in with keys only "
                           "(BatchMode), never a password.",
                           hint=f"Install your public key on the device (`ssh-copy-id {host}`), load it in your "
                           "agent, or name it with --identity KEY or in your ssh config (--ssh-config FILE).")
    if any(s in low for s in _UNREACHABLE):
        return HostUnreachable(f"{host} is unreachable over SSH ({why}).",
                               hint="Check the name and port (user@host:port), that the device is on and its SSH "
                               "server is running (`sudo systemctl enable --now ssh` on a Raspberry Pi).")
    return RemoteRunFailed(f"ssh to {host} failed: {why or 'exit 255 and no message'}.",
                           hint="Run the same `ssh` by hand to see what it wants (edgekit passes -o BatchMode=yes).")


def _last_lines(text: str, n: int = 2) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " ".join(lines[-n:])[:300].rstrip(".")


__all__ = ["AuthRefused", "EdgekitMissing", "HostUnreachable", "RemoteRunFailed", "classify"]
