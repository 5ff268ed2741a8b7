"""examples/clients/: each client script run as a user would, against a real server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from edgekit.testing.server import REPO

pytest.importorskip("tritonclient.http")


@pytest.mark.parametrize(("script", "url_of", "expect"), [
    ("triton_client.py", lambda s: s.url, "10/10 right"),
    ("httpx_client.py", lambda s: s.base, "classify:"),
])
def test_client_example_runs_against_the_server(served, script, url_of, expect) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "clients" / script), "--url", url_of(served),
                           "--model", "mnist_cnn-int8"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert expect in proc.stdout, proc.stdout
