"""A real OpenSSH server on 127.0.0.1 for the remote tests: throwaway host and user keys, a free port.

It lets in the user the tests run as, with the user key only (no password, no PAM). The client side is an
ssh config file naming the port, the key and a known_hosts that holds the host key, passed with -F
(OpenSSH reads ~/.ssh from the passwd entry, not $HOME, so nothing of the user's own is touched).
`why_not()` says why no server can be started here; the tests skip with that reason.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD_PATHS = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/usr/bin/sshd")


def sshd_binary() -> str | None:
    return shutil.which("sshd") or next((p for p in SSHD_PATHS if os.access(p, os.X_OK)), None)


def why_not() -> str | None:
    """None where an sshd can run here, else the reason (for pytest.skip)."""
    if sshd_binary() is None:
        return "no sshd here (Debian: apt-get install openssh-server; `make test` installs it where it runs as root)"
    if shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "no ssh client / ssh-keygen here (Debian: apt-get install openssh-client)"
    if not Path("/run/sshd").is_dir():
        try:
            Path("/run/sshd").mkdir(mode=0o755, parents=True)
        except OSError as exc:
            return f"sshd needs its privilege-separation folder /run/sshd, which cannot be made here: {exc}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sshd:
    """A running sshd and the client files that reach it."""

    port: int
    user: str
    key: Path  # the user's private key
    config: Path  # the client's ssh config: Host edgekit-test-device -> 127.0.0.1:port
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def spec(self) -> str:
        return f"{self.user}@127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "edgekit-test", "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)


def start(folder: Path, aliases: tuple[str, ...] = ("edgekit-test-device",)) -> Sshd:
    """sshd on a free port of 127.0.0.1, with its keys and configs in FOLDER; ALIASES name it in the client config."""
    folder.mkdir(parents=True, exist_ok=True)
    host_key, user_key = folder / "host_ed25519", folder / "user_ed25519"
    _keygen(host_key)
    _keygen(user_key)
    (folder / "authorized_keys").write_text(Path(f"{user_key}.pub").read_text())
    port, user = free_port(), getpass.getuser()
    server = folder / "sshd_config"
    server.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {host_key}", f"PidFile {folder / 'sshd.pid'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}", "StrictModes no", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "PermitRootLogin prohibit-password", f"AllowUsers {user}",
        "Subsystem sftp internal-sftp", "LogLevel ERROR", "MaxSessions 50", "MaxStartups 50",
        # the device's edgekit caches its facts (CPU peak) here, not in the user's ~/.cache
        f"SetEnv EDGEKIT_CACHE_DIR={folder / 'device-cache'}",
    ]) + "\n")
    host_pub = Path(f"{host_key}.pub").read_text().split()
    known = folder / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n")
    client = folder / "ssh_config"
    client.write_text("".join(
        f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  HostKeyAlias [127.0.0.1]:{port}\n"
        for alias in aliases) + f"Host *\n  IdentityFile {user_key}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  GlobalKnownHostsFile /dev/null\n")
    log = folder / "sshd.log"
    proc = subprocess.Popen([sshd_binary() or "sshd", "-D", "-e", "-f", str(server)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited {proc.returncode}: {log.read_text()[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return Sshd(port=port, user=user, key=user_key, config=client, proc=proc, log=log)
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"sshd did not listen on 127.0.0.1:{port} within 10 s: {log.read_text()[-500:]}")


__all__ = ["Sshd", "free_port", "start", "why_not"]
