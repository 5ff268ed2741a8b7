"""The remote tests' device: a real sshd on 127.0.0.1 (tests/remote/sshd.py) and this machine's edgekit behind it.

The "device" runs the edgekit installation the tests run in (`sys.executable -m edgekit.cli`, passed as
--remote-python): a second venv would only add minutes of installing the same wheels. Its artifact cache
is a temp folder (--remote-cache), so nothing outside the test's folders is written.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.remote import sshd


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sshd.Sshd]:
    why = sshd.why_not()
    if why:
        pytest.skip(why)
    s = sshd.start(tmp_path_factory.mktemp("sshd"), aliases=("edgekit-test-device", "edgekit-test-device-2"))
    yield s
    s.stop()


@pytest.fixture()
def remote_args(server: sshd.Sshd, tmp_path: Path) -> list[str]:
    """The options that reach the test device and run its edgekit, with a cache of this test's own."""
    return ["--ssh-config", str(server.config), "--remote-python", sys.executable,
            "--remote-cache", str(tmp_path / "device-cache")]


