"""The inspect tests build their .tflite files with the flatbuffer helper that lives beside the Edge TPU tests."""

from __future__ import annotations

import sys
from pathlib import Path

_EDGETPU_TESTS = str(Path(__file__).resolve().parents[1] / "edgetpu")
if _EDGETPU_TESTS not in sys.path:
    sys.path.insert(0, _EDGETPU_TESTS)
