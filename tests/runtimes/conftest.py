"""The tiny CNN in every format (edgekit.runtimes.testmodels), built once per test session."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from edgekit.runtimes import testmodels

    return testmodels.build(tmp_path_factory.getbasetemp() / "edgekit-tiny-models")
