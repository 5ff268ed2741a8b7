"""The flags issue 38 made one declaration (edgekit.core.flags): --edgetpu-min-runtime takes one form and one parser
on every command that has it (convert, inspect) and in the Python API."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.cli import main
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
