"""Bad input: a one-paragraph error, a non-zero exit, no traceback, and no user file changed."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from edgekit.cli import main
from edgekit.core.errors import EXIT_CONVERSION, EXIT_MISSING, EXIT_USAGE

MODELS = Path(__file__).resolve().parents[2] / "models"


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copy(MODELS / "mnist_cnn.pt2", tmp_path / "good.pt2")
    shutil.copy(MODELS / "mnist_cnn.state_dict.pt", tmp_path / "weights.pt")
    shutil.copy(MODELS / "mnist_cnn.torchscript.pt", tmp_path / "script.pt")
    data = (MODELS / "mnist_cnn.pt2").read_bytes()
    (tmp_path / "truncated.pt2").write_bytes(data[: len(data) // 2])
    (tmp_path / "notes.pt").write_text("these are my notes, not a model\n")
    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "garbage.onnx").write_bytes(b"\x08\x07" + bytes(range(200)))
    (tmp_path / "badmodels.py").write_text(
        "import torch\n"
        "class InvNet(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.linalg.inv(x.reshape(-1, 28, 28)[:, :4, :4] + torch.eye(4)).flatten(1)\n"
        "def build():\n    return InvNet()\n"
    )
    import torch

    torch.save({}, tmp_path / "inv_weights.pt")
    return tmp_path


CASES = [
    (["missing.pt2"], EXIT_USAGE, "No such file"),
    (["truncated.pt2"], EXIT_USAGE, "truncated"),
    (["notes.pt"], EXIT_USAGE, "not a model file"),
    (["empty.onnx"], EXIT_USAGE, "empty"),
    (["garbage.onnx"], EXIT_USAGE, "not a readable ONNX model"),
    (["weights.pt"], EXIT_USAGE, "--model package.module:factory"),
    (["weights.pt", "--model", "nosuchmod:build", "--input-shape", "1,1,28,28"], EXIT_USAGE, "Cannot import"),
    (["weights.pt", "--model", "models.mnist_cnn:build"], EXIT_USAGE, "--input-shape"),
    (["script.pt", "--input-shape", "1,3,32,32"], EXIT_USAGE, "does not accept an input of shape"),
    (["good.pt2", "--input-shape", "1,3,28,28"], EXIT_USAGE, "does not fit the model"),
    (["good.pt2", "--target", "tflit"], EXIT_USAGE, "did you mean 'tflite'"),
    (["good.pt2", "--quantize", "int8"], EXIT_USAGE, "calibration data"),
    (["good.pt2", "--calib", "mnsit", "--quantize", "int8"], EXIT_USAGE, "mnist"),
    (["inv_weights.pt", "--model", "badmodels:build", "--input-shape", "1,1,28,28"], EXIT_CONVERSION,
     "aten.linalg_inv_ex"),
]


@pytest.mark.parametrize(("args", "code", "text"), CASES, ids=[" ".join(c[0]) for c in CASES])
@pytest.mark.slow  # loads the model in a child process and in torch, seconds per case
def test_bad_input(work: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int, text: str,
                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(MODELS.parent))  # so models.mnist_cnn imports from the repo
    before = _snapshot(work)
    rc = main(["convert", *args, "--out", str(work / "out")])
    err = capsys.readouterr().err
    assert rc == code, err
    assert text in err
    assert "Traceback" not in err
    assert "error:" in err
    assert _snapshot(work) == before  # nothing written, nothing changed, no staging folder left


@pytest.mark.slow  # loads the source model (child process and torch) before the plan refuses: seconds
def test_missing_extra_names_pip_line(work: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.conversion.plan as plan

    monkeypatch.setattr(plan, "available", lambda m: m not in ("onnx2tf", "tensorflow"))
    rc = main(["convert", "good.pt2", "--target", "tflite", "--out", str(work / "out")])
    err = capsys.readouterr().err
    assert rc == EXIT_MISSING
    assert "pip install 'edgekit[convert]'" in err
