"""--reparameterize (edgekit.sources.torch_reparam): a torch module's branches fused before export, the unfused
module kept as the reference, what was fused recorded in the manifest (issue 41)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

FACTORY = "edgekit.testing.mobile_blocks:mobileone"


def test_each_block_is_fused_and_the_function_kept() -> None:
    from edgekit.sources.torch_reparam import reparameterized
    from edgekit.testing import mobile_blocks

    model = mobile_blocks.mobileone(depth=2, channels=8)
    fused, calls = reparameterized(model)
    assert dict(calls) == {"MobileOneBlock.reparameterize": 5}  # the stem and 2 x (depthwise, pointwise)
    assert fused is not model and any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in fused.modules())
    x = mobile_blocks.example(model, 4)
    with torch.no_grad():
        assert torch.allclose(fused(x), model(x), rtol=1e-4, atol=1e-5)


def test_a_fuse_that_returns_a_module_replaces_it_and_a_root_method_is_the_models() -> None:
    from edgekit.sources.torch_reparam import reparameterized

    class ConvBN(torch.nn.Sequential):  # RepViT's Conv2d_BN: fuse() returns the fused conv
        def fuse(self) -> torch.nn.Module:
            return torch.nn.Identity()

    class Root(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = ConvBN(torch.nn.Conv2d(1, 1, 1), torch.nn.BatchNorm2d(1))
            self.deployed = False

        def switch_to_deploy(self) -> None:
            self.deployed = True

    fused, calls = reparameterized(torch.nn.Sequential(ConvBN(torch.nn.Conv2d(1, 1, 1))))
    assert dict(calls) == {"ConvBN.fuse": 1} and isinstance(fused[0], torch.nn.Identity)
    root, calls = reparameterized(Root())
    assert dict(calls) == {"Root.switch_to_deploy": 1} and root.deployed and isinstance(root.block, ConvBN)


@pytest.mark.slow  # a torch.export: seconds
def test_sources_without_the_module_or_the_methods_are_refused(tmp_path: Path) -> None:
    from edgekit.core.errors import UsageError
    from edgekit.sources.base import LoadOptions
    from edgekit.sources.torch import load
    from edgekit.testing import mobile_blocks

    with pytest.raises(UsageError, match="no module of this model has"):
        load(None, LoadOptions(factory="edgekit.testing.mobile_blocks:efficientvit", input_shape=[1, 3, 32, 32],
                               reparameterize=True), "torch-factory")
    pt2 = mobile_blocks.export(mobile_blocks.mobileone(depth=1, channels=8), tmp_path / "m.pt2")
    with pytest.raises(UsageError, match="holds its traced graph only") as err:
        load(pt2, LoadOptions(reparameterize=True), "torch-exported")
    assert "--model" in (err.value.hint or "")


@pytest.mark.slow  # builds and runs a 13-block torch model twice: seconds
def test_the_loaded_source_exports_the_fused_model_and_validates_against_the_unfused() -> None:
    from edgekit.sources.base import LoadOptions
    from edgekit.sources.torch import load
    from edgekit.testing import mobile_blocks

    src = load(None, LoadOptions(factory=FACTORY, input_shape=[1, 3, 32, 32], reparameterize=True), "torch-factory")
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in src.model.modules())  # what is exported
    (said,) = src.changes
    assert "reparameterize() on 13 module(s)" in said and "unfused one is the reference" in said
    x = mobile_blocks.example(None, 1).numpy()  # the source's static batch
    unfused = mobile_blocks.mobileone()
    with torch.no_grad():
        np.testing.assert_array_equal(src.predict(x), unfused(torch.from_numpy(x)).numpy())


@pytest.mark.slow  # a PyTorch -> ONNX export and its validation: seconds
def test_convert_reparameterize_records_it_and_passes(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    import json

    import onnx

    from edgekit.conversion.pipeline import convert

    np.savez(tmp_path / "calib.npz", x=np.random.default_rng(0).standard_normal((16, 3, 32, 32)).astype(np.float32))
    result = convert(None, "onnx", "fp32", model=FACTORY, input_shape="1,3,32,32", reparameterize=True,
                     calib=str(tmp_path / "calib.npz"), out=tmp_path / "out")
    assert not result.failed, [a.failure for a in result.failed]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["options"]["reparameterize"] is True
    assert any("re-parameterized" in c for c in manifest["source"]["changes"])
    art = result.artifacts[0]
    assert art.fidelity is not None and art.fidelity.passed
    convs = [n for n in onnx.load(tmp_path / "out" / Path(art.path).name).graph.node if n.op_type == "Conv"]
    assert len(convs) == 13  # one per block: 4 branches, a scale and an identity folded into each


def test_in_memory_only_a_torch_module_is_fused_and_a_hostile_record_names_no_twin(tmp_path: Path) -> None:
    import json

    from edgekit.core.errors import UsageError
    from edgekit.sources.memory import RECORD_FILE, fused_twin, refuse_reparameterize

    refuse_reparameterize("torch-module")
    with pytest.raises(UsageError, match="holds its traced graph only"):
        refuse_reparameterize("torch-exported-program")
    with pytest.raises(UsageError, match="this is a keras"):
        refuse_reparameterize("keras")
    (tmp_path / "m.pt2").write_bytes(b"x")
    (tmp_path / "m.fused.pt2").write_bytes(b"y")
    assert fused_twin(tmp_path / "m.pt2") is None  # no record: a user's own file
    for record, found in (({"file": "m.pt2", "fused": "m.fused.pt2", "fused_by": {"B.fuse": 2}}, True),
                          ({"file": "m.pt2", "fused": "../m.fused.pt2"}, True),  # read as a name in the folder
                          ({"file": "other.pt2", "fused": "m.fused.pt2"}, False), ({"file": "m.pt2"}, False),
                          ({"file": "m.pt2", "fused": "gone.pt2"}, False), ([1, 2], False)):
        (tmp_path / RECORD_FILE).write_text(json.dumps(record))
        twin = fused_twin(tmp_path / "m.pt2")
        assert (twin is not None) is found, record
        if twin is not None:
            assert twin[0] == tmp_path / "m.fused.pt2"
    (tmp_path / RECORD_FILE).write_text("{not json")
    assert fused_twin(tmp_path / "m.pt2") is None


@pytest.mark.slow  # torch.export twice, a PyTorch -> ONNX export and its validation: seconds
def test_convert_an_in_memory_module_reparameterized_validates_against_the_unfused(tmp_path: Path) -> None:
    import json

    import edgekit
    from edgekit.testing import mobile_blocks

    model = mobile_blocks.mobileone()
    calib = {"input": np.random.default_rng(0).standard_normal((16, 3, 32, 32)).astype(np.float32)}
    result = edgekit.convert(model, "onnx", "fp32", example_inputs=mobile_blocks.example(model), calib=calib,
                             reparameterize=True, out=tmp_path / "out", quiet=True)
    art = result["onnx", "fp32"]
    assert art.fidelity is not None and art.fidelity.passed
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["options"]["reparameterize"] is True
    assert any("reparameterize() on 13 module(s)" in c and "unfused one is the reference" in c
               for c in manifest["source"]["changes"])
    record = json.loads((tmp_path / "out" / "source" / "source.json").read_text())
    assert record["fused"] == "model.fused.pt2" and record["fused_by"] == {"MobileOneBlock.reparameterize": 13}
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())  # the user's module is left unfused
