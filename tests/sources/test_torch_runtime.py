"""The torch runtime: the source model in each saved form, with the source loader's safety rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgekit.core.errors import NotAvailable, UnsupportedModel, UsageError
from edgekit.testing import tiny_cnn

torch = pytest.importorskip("torch")
from edgekit.sources.torch_runtime import TorchRuntime  # noqa: E402


@pytest.fixture()
def state_dict_and_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    pkg = tmp_path / "tinyfactory_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "net.py").write_text(
        "from edgekit.testing import tiny_cnn\n\n"
        "def build():\n"
        "    return tiny_cnn.torch_module({k: v * 0 for k, v in tiny_cnn.weights().items()})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sd = tmp_path / "tiny.state_dict.pt"
    torch.save({k: torch.from_numpy(v) for k, v in tiny_cnn.weights().items()}, sd)
    return sd, "tinyfactory_pkg.net:build"


def test_state_dict_needs_and_uses_the_factory(state_dict_and_factory: tuple[Path, str]) -> None:
    sd, factory = state_dict_and_factory
    with pytest.raises(UsageError, match="state_dict"):
        TorchRuntime().load(sd, input_shape=[1, 1, 28, 28])
    rt = TorchRuntime()
    rt.load(sd, factory=factory, input_shape=[1, 1, 28, 28])
    assert rt.inputs[0].shape == [-1, 1, 28, 28]  # an eager module takes any batch
    x = tiny_cnn.sample_inputs(3)
    y = rt.run_float({rt.inputs[0].name: x})["output_0"]
    np.testing.assert_allclose(y, tiny_cnn.forward(x), rtol=1e-4, atol=1e-4)


def test_pickled_module_refused_unless_trusted(tmp_path: Path) -> None:
    p = tmp_path / "whole.pt"
    torch.save(torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3)), p)  # a whole module: unpickling runs code
    with pytest.raises(UnsupportedModel, match="pickled"):
        TorchRuntime().load(p, input_shape=[1, 1, 28, 28])


def test_torchscript_needs_a_shape(tiny_models: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="input shape"):
        TorchRuntime().load(tiny_models["models"]["torchscript"])


def test_exported_program_specs_and_names(tiny_models: dict[str, Any]) -> None:
    rt = TorchRuntime()
    rt.load(tiny_models["models"]["torch-pt2"], threads=1)
    assert rt.inputs[0].shape == [-1, 1, 28, 28] and rt.inputs[0].layout == "NCHW"
    assert rt.info()["threads"] == 1 and rt.info()["kind"] == "torch-exported"
    out = rt.run({rt.inputs[0].name: np.zeros((2, 1, 28, 28), np.float32)})
    assert next(iter(out.values())).shape == (2, 10)
    assert rt.outputs[0].shape == [2, 10]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present: the contract suite runs on it")
def test_cuda_absent_message(tiny_models: dict[str, Any]) -> None:
    with pytest.raises(NotAvailable, match="sees no CUDA GPU") as err:
        TorchRuntime().load(tiny_models["models"]["torch-pt2"], device="gpu")
    assert "pytorch.org" in err.value.hint
