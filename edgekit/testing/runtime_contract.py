"""The contract every runtime keeps on a model that computes the tiny CNN (edgekit.testing.tiny_cnn), in one place
for the suites that check it: tests/runtimes (the tiny CNN in every format) and tests/conformance (edgekit's own
artifacts of every target).

What it checks: the runtime names its version and says it is available on the device it loaded on; one input and
one output; the input's type is the artifact's; run_float gives the reference outputs (fp32: within 1e-4; other
precisions: cosine above 0.99 and the argmax on at least 7 of 8 samples); run() on the model's own types and
bind() agree exactly and dequantize to run_float's values; a dynamic batch runs as one call; bad input is an
edgekit error (a UsageError for an unknown input name), never a vendor exception.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def check_contract(rt: Any, precision: str, dtype: str, device: str, x: np.ndarray, ref: np.ndarray) -> None:
    """RT, loaded on DEVICE, on inputs X (NCHW; fed NHWC where the model takes that) against the outputs REF."""
    import pytest

    from edgekit.core.errors import EdgekitError, UsageError
    from edgekit.runtimes.base import dequantize, quantize

    cls = type(rt)
    assert isinstance(cls.version(), str) and cls.version()
    assert cls.available(device) == (True, "")
    assert len(rt.inputs) == 1 and len(rt.outputs) == 1
    spec = rt.inputs[0]
    assert spec.shape[1:] in ([1, 28, 28], [28, 28, 1])
    assert spec.dtype == dtype, (spec.dtype, dtype)
    xin = x if spec.shape[1:] == [1, 28, 28] else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    ys = np.concatenate([next(iter(rt.run_float({spec.name: xin[i:i + 1]}).values())) for i in range(len(x))])
    assert ys.shape == ref.shape and ys.dtype == np.float32
    if precision == "fp32":
        np.testing.assert_allclose(ys, ref, rtol=1e-4, atol=1e-4)
    else:  # quantized I/O handled; close in direction and in argmax
        cos = (ys * ref).sum(1) / np.linalg.norm(ys, axis=1) / np.linalg.norm(ref, axis=1)
        assert cos.min() > 0.99, cos
        assert (ys.argmax(1) == ref.argmax(1)).mean() >= 0.875

    # run() on the model's own dtypes and bind() give the same values
    raw = {spec.name: quantize(xin[:1], spec)}
    out_run = rt.run(raw)
    out_bound = rt.bind(raw)()
    values = list(out_bound.values()) if isinstance(out_bound, dict) else list(out_bound)
    for a, b in zip(out_run.values(), values, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_allclose(dequantize(next(iter(out_run.values())), rt.outputs[0]), ys[:1], rtol=1e-5, atol=1e-5)

    # a batch, where the batch dim is dynamic
    if spec.shape[0] == -1:
        yb = next(iter(rt.run_float({spec.name: xin[:4]}).values()))
        if precision == "dynamic":  # activations quantized with the ranges of the whole batch: close, not equal
            cos = (yb * ys[:4]).sum(1) / np.linalg.norm(yb, axis=1) / np.linalg.norm(ys[:4], axis=1)
            assert cos.min() > 0.99, cos
        else:
            np.testing.assert_allclose(yb, ys[:4], rtol=1e-4, atol=1e-4 if precision == "fp32" else 1e-6)

    # bad input is an edgekit error, never a vendor exception
    with pytest.raises(UsageError):
        rt.run_float({"no-such-input": xin[:1]})
    with pytest.raises(EdgekitError):
        rt.run({spec.name: np.zeros((1, 3, 5), dtype=np.float64)})


__all__ = ["check_contract"]
