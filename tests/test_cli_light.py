"""`edgekit --help` must stay fast: no ML framework is imported on that path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def test_ctrl_c_says_interrupted_and_exits_130(tmp_path, monkeypatch, capsys) -> None:
    """typer turns a Ctrl-C inside a command into a silent return of 130: the CLI must still say what it left."""
    import edgekit.conversion.pipeline
    from edgekit.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(edgekit.conversion.pipeline, "convert", interrupted)
    model = Path(__file__).resolve().parents[1] / "models" / "mnist_cnn.pt2"
    rc = main(["convert", str(model), "--target", "onnx", "--out", str(tmp_path / "out")])
    assert rc == 130
    assert "interrupted: outputs of earlier runs were left as they were." in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
