"""The manifest records the versions of what converted each artifact: the common tools, each target's own and its
format's libraries (from the format's record)."""

from __future__ import annotations

from types import SimpleNamespace

from edgekit.conversion.execute import TOOL_DISTS, tool_dists
from edgekit.targets import TARGETS, get_target


def _plan(*targets: str) -> SimpleNamespace:
    return SimpleNamespace(chains=[SimpleNamespace(target=t) for t in targets])


def test_an_openvino_run_records_openvino_and_nncf() -> None:
    assert tool_dists(_plan("onnx", "openvino", "openvino")) == [*TOOL_DISTS, "nncf", "openvino"]
    assert tool_dists(_plan("onnx", "tflite")) == list(TOOL_DISTS)


def test_every_targets_own_distributions_are_what_an_extra_installs() -> None:
    import re
    from pathlib import Path

    import tomllib

    meta = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    reqs = [*meta["dependencies"], *(r for extra in meta["optional-dependencies"].values() for r in extra)]
    installable = {re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower() for r in reqs}
    for name in TARGETS:
        assert set(get_target(name).all_dists()) <= installable, name
