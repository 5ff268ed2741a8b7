"""Fixtures of the int8 recovery tests: small real ONNX models built with onnx.helper (milliseconds)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from onnx_models import conv_chain, head_spread, images  # noqa: E402


@pytest.fixture(scope="module")
def spread_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two channels 100x wider between the first conv and the depthwise one (the same function)."""
    return conv_chain(tmp_path_factory.mktemp("q") / "spread.onnx", spread=100.0)


@pytest.fixture(scope="module")
def head_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return head_spread(tmp_path_factory.mktemp("q") / "head.onnx", spread=100.0)


@pytest.fixture(scope="module")
def samples():
    return images(320)  # the search judges on half: enough for its margin on agreement
