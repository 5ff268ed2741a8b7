"""Real conversions for the check tests, each made once per session with small calibration/validation sets.

`ci_run` runs the example GitHub workflow's own `run:` steps in a scratch git repository holding the bundled
model (workflow_steps.py); its output folder is the bundled model's conversion the other tests compare with.
Every model is converted with the same options, so their held-out digits are the same 200.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workflow_steps import CONVERT_OPTIONS, REPO, CiRun, run_workflow  # noqa: E402 - the folder is on the path now


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory: pytest.TempPathFactory) -> CiRun:
    return run_workflow(tmp_path_factory.mktemp("ci-repo"))


def _convert(source: Path, out: Path, targets: str, quantize: str, **options: Any) -> Path:
    from edgekit.conversion.pipeline import convert

    convert(source, targets, quantize, out=out, **{**CONVERT_OPTIONS, **options})
    return out


@pytest.fixture(scope="session")
def wide_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled model with its hidden dense layer 128 -> 192 units, converted like ci_run's."""
    import variants

    d = tmp_path_factory.mktemp("wide")
    return _convert(variants.wide_pt2(REPO, d), d / "out", "onnx", "fp32,int8")


@pytest.fixture(scope="session")
def sabotaged_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled model, int8 calibrated on black images, validated on the same 200 test digits as ci_run."""
    import variants

    d = tmp_path_factory.mktemp("sabotaged")
    return _convert(REPO / "models" / "mnist_cnn.pt2", d / "out", "onnx", "int8",
                    calib=str(variants.constant_calibration(d)))


@pytest.fixture(scope="session")
def leaky_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny CNN with a LeakyReLU, converted for the Edge TPU (the pre-flight runs; no compiler here)."""
    import variants

    d = tmp_path_factory.mktemp("leaky")
    return _convert(variants.leaky_pt2(d), d / "out", "edgetpu", "int8")
