"""The ONNX `nncf` recipe: NNCF's post-training quantization (`nncf.quantize`, its ONNX backend) on the same
calibration samples, with its full bias correction, as one more candidate of `auto`.

Why NNCF's and not only edgekit's: NNCF places its quantizers by its own hardware-aware rules (what feeds a
MatMul/Conv and what stays float around them), measures activation ranges with its own estimators, and corrects
each layer's bias by running the float and the int8 model layer by layer on the calibration data (the full
`BiasCorrection`, not the one-statistic `FastBiasCorrection`). On the trained PP-OCRv4 recognizer this made the
difference (issue 29; docs/results/int8.md): per-step agreement on held-out text lines 98.7% against plain's
91-92%, where edgekit's own bias correction and calibration statistics stayed under 95%.

What the record says of it: `config.tool` is "nncf", its weights are symmetric per-channel int8 (no 7-bit
`reduce_range`: NNCF keeps the first layer's overflow fix instead), its activations NNCF's choice. Mixed precision
on this base leaves layers in float through NNCF's `ignored_scope` (the recipe is rebuilt for each candidate); the
per-layer damage that ranks them is measured with onnxruntime's quantizer, as for every base.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """NNCF's progress bars (rich, on stdout: `edgekit convert --json` prints the manifest there) and its INFO lines
    kept off the terminal while inside."""
    logger = logging.getLogger("nncf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


# DATA and CONFIG below are edgekit.quantize.onnx.recipes' QuantData and OnnxRecipeConfig, whose Nncf recipe calls
# nncf_quantize: not imported here, not even for type checking (edgekit has no import cycle, tests/test_import_graph.py)


def batches(data: Any) -> list[dict[str, Any]]:
    """DATA's calibration samples as NNCF's dataset items: one dict of every input per run of the model's batch."""
    feeds = data.feeds or {data.name: data.samples}
    n, b = len(data.samples), max(1, data.batch)
    return [{k: v[i:i + b] for k, v in feeds.items()} for i in range(0, n - b + 1, b)]


def nncf_quantize(src: Path, dst: Path, data: Any, config: Any) -> None:
    """SRC quantized by nncf.quantize (ONNX backend, full bias correction) on DATA's samples, CONFIG's excluded
    nodes left in float (ignored_scope), written to DST."""
    import onnx

    from edgekit.core.border import vendor_errors
    from edgekit.core.vendor_telemetry import require_quiet

    nncf = require_quiet("nncf", "convert")  # `import nncf` alone sends usage events and writes a client id
    model = onnx.load(str(src))
    items = batches(data)
    names = list(config.excluded())
    with vendor_errors("nncf", what="NNCF int8 quantization failed"), _quiet():
        q = nncf.quantize(model, nncf.Dataset(items), preset=nncf.QuantizationPreset.PERFORMANCE,
                          target_device=nncf.TargetDevice.ANY, subset_size=len(items),
                          fast_bias_correction=not config.bias_correct,
                          ignored_scope=nncf.IgnoredScope(names=names, validate=False) if names else None)
    if config.decode_heads:  # a detector's last head layers write float for the float decode (as ort.quantize does)
        from edgekit.quantize.detect_decode import float_head_outputs

        float_head_outputs(q, config.decode_heads)
    onnx.save(q, str(dst))


def available() -> bool:
    """Whether NNCF can be imported here (auto skips the candidate, with a note, where not)."""
    import importlib.util

    return importlib.util.find_spec("nncf") is not None


__all__ = ["available", "batches", "nncf_quantize"]
