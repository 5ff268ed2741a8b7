"""The one parser of command-line lists (edgekit.core.parse) and the one layout guess (edgekit.core.layout)."""

from __future__ import annotations

import pytest

from edgekit.core.errors import UsageError
from edgekit.core.layout import guess_layout
from edgekit.core.parse import parse_floats, parse_ints, parse_names


def test_parse_ints() -> None:
    assert parse_ints(None) is None
    assert parse_ints("1,3,224,224") == parse_ints("1x3x224x224") == parse_ints(" 1, 3 ,224,224,") == [1, 3, 224, 224]
    with pytest.raises(UsageError, match="--batch-shape '1,a' is not a list of integers") as err:
        parse_ints("1,a", "--batch-shape")
    assert err.value.hint == "For example: --batch-shape 1,1,28,28" and err.value.exit_code == 2


def test_parse_floats_and_names() -> None:
    assert parse_floats(None, "--mean") is None
    assert parse_floats("0.5, 0.25", "--mean") == [0.5, 0.25]
    with pytest.raises(UsageError, match="--std 'x' is not a list of numbers"):
        parse_floats("x", "--std")
    assert parse_names(None) is None and parse_names("") is None
    assert parse_names("onnxruntime, litert,,") == ["onnxruntime", "litert"]


@pytest.mark.parametrize(("shape", "layout"), [
    ([1, 3, 224, 224], "NCHW"), ([1, 224, 224, 3], "NHWC"), ([1, 28, 28, 1], "NHWC"), ([1, 1, 28, 28], "NCHW"),
    ([-1, 3, 32, 32], "NCHW"), ([1, 10], "NC"), ([1, 5, 7], "3D"),
])
def test_guess_layout(shape: list[int], layout: str) -> None:
    assert guess_layout(shape) == layout
