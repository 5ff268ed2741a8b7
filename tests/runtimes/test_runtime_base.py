"""The template methods every runtime inherits: checks before loading, vendor errors mapped at one border.

A stand-in runtime (as httpx tests a transport with a mock) raises what a vendor library would,
so the contract is checked without any vendor installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from edgekit.core.artifact import TensorSpec
from edgekit.core.errors import EdgekitError, InternalError, NotAvailable, RuntimeFailure, UsageError
from edgekit.runtimes.base import Runtime, concrete_shape


class VendorInputError(Exception):
    """What a vendor raises for inputs it rejects (onnxruntime's InvalidArgument, say)."""


class StandIn(Runtime):
    name: ClassVar[str] = "standin"
    vendor: ClassVar[str] = "numpy"
    formats: ClassVar[tuple[str, ...]] = ("onnx",)
    devices: ClassVar[tuple[str, ...]] = ("cpu", "gpu")
    load_hint: ClassVar[str | None] = "Re-export the model."
    run_errors: ClassVar[dict[str, type[EdgekitError]]] = {f"{__name__}:VendorInputError": UsageError}
    raise_on_load: ClassVar[BaseException | None] = None
    raise_on_run: ClassVar[BaseException | None] = None

    @classmethod
    def _available(cls, device: str) -> tuple[bool, str]:
        return (device == "cpu", "" if device == "cpu" else "no GPU in this stand-in")

    @classmethod
    def device_hint(cls, device: str) -> str | None:
        return f"install the {device} build"

    def _load(self, path: Path, device: str, threads: int | None, options: dict[str, Any]) -> None:
        if self.raise_on_load is not None:
            raise self.raise_on_load
        self.inputs = [TensorSpec(name="x", shape=[1, 2], dtype="float32")]
        self.outputs = [TensorSpec(name="y", shape=[1, 2], dtype="float32")]

    def _run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.raise_on_run is not None:
            raise self.raise_on_run
        return {"y": inputs["x"] * 2}


@pytest.fixture()
def model_file(tmp_path: Path) -> Path:
    p = tmp_path / "m.onnx"
    p.write_bytes(b"\x08\x07")
    return p


def _standin(monkeypatch: pytest.MonkeyPatch, on_load: BaseException | None = None,
             on_run: BaseException | None = None) -> StandIn:
    monkeypatch.setattr(StandIn, "raise_on_load", on_load)
    monkeypatch.setattr(StandIn, "raise_on_run", on_run)
    return StandIn()


def test_loads_and_runs(model_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _standin(monkeypatch)
    rt.load(model_file, threads=2)
    assert rt.device == "cpu" and rt.threads == 2
    np.testing.assert_array_equal(rt.run({"x": np.ones((1, 2), np.float32)})["y"], [[2.0, 2.0]])


def test_missing_file_is_the_users_to_fix(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="No such file"):
        StandIn().load(tmp_path / "absent.onnx")


def test_device_checked_before_loading(model_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _standin(monkeypatch, on_load=AssertionError("must not load"))
    with pytest.raises(NotAvailable, match="no GPU in this stand-in") as err:
        rt.load(model_file, device="gpu")
    assert err.value.hint == "install the gpu build"
    ok, why = StandIn.available("tpu")
    assert not ok and "has no device 'tpu'" in why and "cpu, gpu" in why


@pytest.mark.parametrize("message", ["", "  \n", "first line\nsecond line"])
def test_vendor_failure_on_load_is_a_runtime_failure(model_file: Path, monkeypatch: pytest.MonkeyPatch,
                                                     message: str) -> None:
    cause = RuntimeError(message)
    rt = _standin(monkeypatch, on_load=cause)
    with pytest.raises(RuntimeFailure) as err:
        rt.load(model_file)
    assert err.value.message.startswith(f"numpy could not load {model_file}: ")
    assert "second line" not in err.value.message and err.value.message.strip()[-1] != ":"
    assert err.value.hint == "Re-export the model." and err.value.__cause__ is cause


def test_bug_in_edgekit_is_an_internal_error_not_bad_input(model_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _standin(monkeypatch)
    rt.load(model_file)
    # an AttributeError raised inside edgekit's own code (concrete_shape given None): a bug, exit 1
    monkeypatch.setattr(rt, "_run", lambda inputs: {"y": concrete_shape(None)})  # type: ignore[arg-type]
    with pytest.raises(InternalError, match="bug in edgekit"):
        rt.run({"x": np.ones((1, 2), np.float32)})
    # the same kind of error raised in the library's code (here: this module, not edgekit): its failure
    monkeypatch.setattr(rt, "_run", lambda inputs: {}["y"])
    with pytest.raises(RuntimeFailure, match="internal error of that library") as err:
        rt.run({"x": np.ones((1, 2), np.float32)})
    assert not isinstance(err.value, InternalError)


def test_run_errors_map_by_type(model_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rt = _standin(monkeypatch)
    rt.load(model_file)
    monkeypatch.setattr(StandIn, "raise_on_run", VendorInputError("wrong rank"))
    with pytest.raises(UsageError, match="numpy failed to run the model: wrong rank") as err:
        rt.run({"x": np.ones((1, 2), np.float32)})
    assert "('x', [1, 2], 'float32')" in err.value.hint
    monkeypatch.setattr(StandIn, "raise_on_run", RuntimeError("kernel failed"))
    with pytest.raises(RuntimeFailure, match="kernel failed"):
        rt.run({"x": np.ones((1, 2), np.float32)})


def test_run_before_load_is_refused() -> None:
    with pytest.raises(UsageError, match="no model loaded"):
        StandIn().run({"x": np.ones((1, 2), np.float32)})
