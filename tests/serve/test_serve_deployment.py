"""The deployment pieces, read statically (no docker engine, no systemd here): the Dockerfile's `device` stage,
the Raspberry Pi unit and install lines. The example clients run against a real server in test_serve_examples.py."""

from __future__ import annotations

import configparser
import json
import re
import shlex

from edgekit.testing.server import REPO


def _stages(text: str) -> dict[str, list[str]]:
    """Dockerfile instructions per stage name (continuation lines joined, comments dropped)."""
    joined = re.sub(r"\\\n", " ", "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#")))
    stages: dict[str, list[str]] = {}
    current: list[str] = []
    for line in joined.splitlines():
        if not line.strip():
            continue
        m = re.match(r"FROM\s+(?:--platform=\S+\s+)?(\S+)\s+AS\s+(\S+)", line, re.I)
        if m:
            current = stages.setdefault(m.group(2), [f"FROM {m.group(1)}"])
        elif current is not None:
            current.append(line.strip())
    return stages


def test_the_device_stage_installs_runtime_and_serve_only_and_runs_edgekit_serve() -> None:
    device = _stages((REPO / "Dockerfile").read_text())["device"]
    assert device[0].startswith("FROM python:")  # its own slim base, not the converter stage
    installs = [ln for ln in device if ln.startswith("RUN") and "pip install" in ln]
    assert len(installs) == 1 and '".[runtime,serve]"' in installs[0]
    text = " ".join(device)
    for heavy in ("torch", "tensorflow", "onnx2tf", "convert]", "[all]", "edgetpu-compiler"):
        assert heavy not in text
    assert "libedgetpu1-std" in text  # the Edge TPU runtime where Coral publishes it
    assert any(ln.startswith("COPY --from=coral-apt") for ln in device)  # Coral's keyring, made once
    assert "USER edgekit" in device
    cmd = json.loads(next(ln for ln in device if ln.startswith("CMD"))[3:])
    assert cmd[:2] == ["edgekit", "serve"] and "--allow-remote" in cmd and "0.0.0.0" in cmd
    assert "--token" not in " ".join(cmd)  # the token comes from the environment at run time, never the image


def test_the_raspberry_pi_unit_runs_edgekit_serve_with_a_token_and_a_drain() -> None:
    folder = REPO / "examples" / "raspberry-pi"
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # keys are case-sensitive in systemd
    unit.read_string((folder / "edgekit-serve.service").read_text())
    service = unit["Service"]
    argv = shlex.split(service["ExecStart"])
    assert argv[0].endswith("/bin/edgekit") and argv[1] == "serve"
    assert "--allow-remote" in argv and argv[argv.index("--token-file") + 1].startswith("/etc/edgekit/")
    drain = int(argv[argv.index("--drain-s") + 1])
    assert service["KillSignal"] == "SIGTERM" and int(service["TimeoutStopSec"]) > drain
    assert service["User"] != "root" and unit["Install"]["WantedBy"] == "multi-user.target"
    install = (folder / "install.sh").read_text()
    assert "pip install 'edgekit[serve]'" in install and "systemctl enable --now edgekit-serve" in install
    assert "openssl rand -hex 32" in install and "umask 077" in install
