"""The arm64 userland the emulated tests run in, built once per session (about 30 s; edgekit.emulate.userland).

Needs root, Debian's debootstrap and qemu-user-static (binfmt_misc enabled; `make test` installs them where it runs
as root with apt: .ci/arm64-tools.sh) and Debian's archive; elsewhere the tests that need it skip and say why.
EDGEKIT_ARM64_ROOT points at a userland to reuse instead of building one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def why_not() -> str | None:
    from edgekit.emulate.launch import binfmt_problem, enable_binfmt

    if os.geteuid() != 0:
        return "the emulated Pi tests need root (the userland's device nodes, chroot)"
    missing = [t for t in ("debootstrap", "dpkg-deb", "unshare", "chroot") if shutil.which(t) is None]
    if missing:
        return f"the emulated Pi tests need {', '.join(missing)} (apt-get install debootstrap qemu-user-static)"
    enable_binfmt()
    return binfmt_problem()


@pytest.fixture(scope="session")
def arm64_userland(tmp_path_factory: pytest.TempPathFactory):
    why = why_not()
    if why:
        pytest.skip(why)
    from edgekit.core.errors import EdgekitError
    from edgekit.emulate.userland import build, find

    given = os.environ.get("EDGEKIT_ARM64_ROOT")
    if given and find(Path(given)) is not None:
        return find(Path(given))
    try:
        return build(tmp_path_factory.mktemp("arm64") / "bookworm")
    except EdgekitError as exc:  # Debian's archive or the package index out of reach: nothing to test on
        pytest.skip(f"the arm64 userland could not be built here: {exc.message}")
