"""edgekit.testing.mobile_blocks.efficientformerv2: EfficientFormerV2's attention block in small, with what the Edge TPU
pre-flight meets in the real one (issue 41): two products of computed tensors (q @ k, attn @ v) and a softmax over
the keys, between the block's convolutions."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_the_block_multiplies_two_computed_tensors_twice_and_softmaxes_the_keys() -> None:
    from edgekit.testing import mobile_blocks

    model = mobile_blocks.efficientformerv2()
    x = mobile_blocks.example(model)
    assert tuple(model(x).shape) == (1, 10)
    graph = torch.export.export(model, (x,)).graph
    targets = [str(n.target) for n in graph.nodes if n.op == "call_function"]
    products = [t for t in targets if "bmm" in t or "matmul" in t]
    assert len(products) == 2, targets
    assert sum("softmax" in t for t in targets) == 1
    with torch.no_grad():  # the relative-position bias is part of the scores, not a zero left out
        before = model(x)
        model.block.attn.bias.zero_()
        assert not torch.allclose(before, model(x))
