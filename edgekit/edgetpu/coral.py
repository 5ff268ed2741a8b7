"""How to install Coral's Edge TPU packages: the one text every hint quotes.

Coral ships the compiler (`edgetpu-compiler`) and the runtime library (`libedgetpu1-std`, or
`libedgetpu1-max` for the faster clock) only from its own apt repository, never from a Python
registry. The setup follows https://coral.ai/docs/edgetpu/compiler/ and
https://coral.ai/docs/accelerator/get-started/, with the key in its own keyring (`signed-by`)
instead of the deprecated `apt-key add`, exactly as the project's Dockerfile does it.
"""

from __future__ import annotations

CORAL_APT_KEY = "https://packages.cloud.google.com/apt/doc/apt-key.gpg"
CORAL_KEYRING = "/usr/share/keyrings/coral-edgetpu.gpg"
CORAL_APT_LINE = f"deb [signed-by={CORAL_KEYRING}] https://packages.cloud.google.com/apt coral-edgetpu-stable main"
COMPILER_PACKAGE = "edgetpu-compiler"
RUNTIME_PACKAGE = "libedgetpu1-std"
RUNTIME_GET_STARTED = "https://coral.ai/docs/accelerator/get-started/"


def apt_install(package: str) -> str:
    """The shell line that adds Coral's apt repository and installs PACKAGE (Debian/Ubuntu/Raspberry Pi OS)."""
    return (
        f"curl -fsSL {CORAL_APT_KEY} | sudo gpg --dearmor -o {CORAL_KEYRING} && "
        f'echo "{CORAL_APT_LINE}" | sudo tee /etc/apt/sources.list.d/coral-edgetpu.list && '
        f"sudo apt-get update && sudo apt-get install {package}"
    )


def runtime_install_hint() -> str:
    """How to get the Edge TPU runtime (libedgetpu) onto a device: the hint of every 'no Edge TPU here' error."""
    return (
        f"On Debian/Ubuntu/Raspberry Pi OS: {apt_install(RUNTIME_PACKAGE)} (see {RUNTIME_GET_STARTED}), "
        "then plug in the Coral device."
    )


__all__ = [
    "COMPILER_PACKAGE",
    "CORAL_APT_KEY",
    "CORAL_APT_LINE",
    "RUNTIME_PACKAGE",
    "apt_install",
    "runtime_install_hint",
]
