"""bench/zoo_report.py for the zoo report tests, imported by path (bench/ is not a package; its modules import each
other by name)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def zoo_report() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("zoo_report")
    finally:
        sys.path.remove(str(BENCH))
