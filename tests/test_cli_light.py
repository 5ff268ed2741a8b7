"""`edgekit --help` must stay fast: no ML framework is imported on that path."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "tensorflow", "keras", "onnx", "onnxruntime", "onnx2tf", "ai_edge_litert", "tf2onnx")


def test_help_imports_no_framework() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from edgekit.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        "    rc = main(['--help'])\n"
        f"print(rc, [m for m in {HEAVY!r} if m in sys.modules], 'convert' in buf.getvalue())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split("\n")[-2] == "0 [] True", out.stdout + out.stderr


def test_version() -> None:
    out = subprocess.run([sys.executable, "-m", "edgekit.cli", "--version"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("edgekit ")
