"""Fixtures of the API's tests: the small ONNX CNN of api_models and images for it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from api_models import cnn_proto


@pytest.fixture()
def proto() -> Any:
    return cnn_proto()


@pytest.fixture()
def images() -> np.ndarray:
    return np.random.default_rng(3).random((240, 3, 12, 12), dtype=np.float32)
