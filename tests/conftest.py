"""Shared fixtures: the bundled model, and one real conversion of it reused by many tests."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "models"

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# a cache of this session's own (probe marks, CPU peak): tests never read or fill the user's ~/.cache
_CACHE = tempfile.mkdtemp(prefix="edgekit-test-cache-")
os.environ["EDGEKIT_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def bundled_pt2() -> Path:
    return MODELS / "mnist_cnn.pt2"


@pytest.fixture(scope="session")
def bundled_conversion(tmp_path_factory: pytest.TempPathFactory, bundled_pt2: Path):
    """The `make demo` conversion, run once: ONNX + TFLite at every precision, calibrated on MNIST."""
    from edgekit.pipeline import convert

    out = tmp_path_factory.mktemp("bundled") / "mnist_cnn"
    return convert(bundled_pt2, "onnx,tflite", "fp32,fp16,dynamic,int8", calib="mnist", out=out)
