from __future__ import annotations

import pytest

from edgekit.core._deps import require
from edgekit.core.errors import EXIT_MISSING, EXIT_USAGE, MissingDependency, UsageError
from edgekit.core.registry import check_choice, suggest


def test_suggest_finds_typo() -> None:
    assert suggest("tflit", ["onnx", "tflite", "edgetpu"]) == "tflite"
    assert suggest("zzz", ["onnx", "tflite"]) is None


def test_check_choice_is_case_insensitive_and_suggests() -> None:
    assert check_choice("ONNX", ["onnx", "tflite"], "target") == "onnx"
    with pytest.raises(UsageError) as exc:
        check_choice("edgtpu", ["onnx", "tflite", "edgetpu"], "target")
    assert "did you mean 'edgetpu'" in (exc.value.hint or "")
    assert exc.value.exit_code == EXIT_USAGE


def test_require_names_the_pip_line() -> None:
    with pytest.raises(MissingDependency) as exc:
        require("edgekit_no_such_module_xyz", extra="convert")
    assert "pip install 'edgekit[convert]'" in (exc.value.hint or "")
    assert exc.value.exit_code == EXIT_MISSING
