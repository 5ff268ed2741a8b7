"""The flags issue 38 made one declaration (edgekit.core.flags): convert's --edgetpu-min-runtime, --input-shape,
--batch, --model, --trust-model, --out and --force take one form and one parser on every command that has them, and
the forms typed before keep working."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from edgekit.cli import main
from edgekit.commands.profile import one_shape
from edgekit.conversion.options import ConvertOptions
from edgekit.core.errors import UsageError
from edgekit.core.flags import edgetpu_runtime


@pytest.mark.parametrize("argv", [["inspect", "model.tflite"], ["convert", "models/mnist_cnn.pt2", "--target",
                                                                 "edgetpu", "--calib", "mnist"]])
@pytest.mark.parametrize("value", ["9", "17", "abc"])
def test_edgetpu_min_runtime_is_one_version_checked_alike(argv: list[str], value: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """inspect's and convert's --edgetpu-min-runtime refuse the same values with the same message, before any file
    is read (inspect took any int from 10 and convert 10 to 16 before)."""
    assert main([*argv, "--edgetpu-min-runtime", value, "--out" if argv[0] == "convert" else "--json",
                 *([str(tmp_path / "o")] if argv[0] == "convert" else [])]) == 2
    err = capsys.readouterr().err
    assert f"--edgetpu-min-runtime '{value}' is not an Edge TPU runtime version." in err and "10 to 16" in err


def test_edgetpu_min_runtime_is_an_int_from_the_api_too() -> None:
    assert edgetpu_runtime("14") == 14 and edgetpu_runtime(13) == 13 and edgetpu_runtime(None) is None
    options = ConvertOptions.from_keywords(edgetpu_min_runtime="13")
    assert options.edgetpu_min_runtime == 13  # the string parsed by the flag's one parser
    options = ConvertOptions(edgetpu_min_runtime="12")
    options.check()
    assert options.edgetpu_min_runtime == 12  # a value set as is: checked and made the int the manifest records
    with pytest.raises(UsageError, match="not an Edge TPU runtime version"):
        ConvertOptions(edgetpu_min_runtime=9).check()
    import edgekit

    with pytest.raises(UsageError, match="'9' is not an Edge TPU runtime version"):  # before the file is looked for
        edgekit.inspect("no-such-model.tflite", min_runtime=9)


def test_profile_takes_convert_s_input_shape_forms() -> None:
    assert one_shape([1, 1, 28, 28], None) == [1, 1, 28, 28]
    assert one_shape(None, {"image": [1, 3, 32, 32]}) == [1, 3, 32, 32]
    assert one_shape(None, None) is None
    with pytest.raises(UsageError, match="one input; --input-shape named 2: a, b") as exc:
        one_shape(None, {"a": [1, 2], "b": [1, 3]})
    assert ".onnx" in (exc.value.hint or "")


def test_profile_s_input_shape_reaches_the_runtime(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import edgekit.api.measure as measure

    seen: dict[str, Any] = {}

    def fake_profile(artifact: Path, device: str, **kw: Any) -> Any:
        seen.update(kw["options"])
        return SimpleNamespace(to_dict=dict)

    monkeypatch.setattr(measure, "profile", fake_profile)
    for shape in ("1,1,28,28", "input:1,1,28,28"):
        seen.clear()
        assert main(["profile", "m.pt", "--json", "--input-shape", shape, "--model", "models.mnist_cnn:build"]) == 0
        assert seen == {"input_shape": [1, 1, 28, 28], "factory": "models.mnist_cnn:build"}, shape
    assert main(["profile", "m.pt", "--input-shape", "a:1,2", "--input-shape", "b:1,3"]) == 2
    assert "profile takes the shape of one input" in capsys.readouterr().err
    assert main(["profile", "m.pt", "--input-shape", "1,2", "--input-shape", "1,3"]) == 2  # convert's message
    assert "--input-shape is given twice without input names" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["profile", "bench", "convert"])
def test_batch_below_one_is_refused_on_every_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "model.onnx", "--batch", "0"]) == 2
    assert "--batch" in capsys.readouterr().err
