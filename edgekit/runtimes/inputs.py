"""The arrays a loaded runtime is fed when measured: random data, or real samples.

Random data has each input's own dtype, shape and range (for an int8 input: the whole int8
range, which is what the model's quantization maps onto its float range). Real samples
(`mnist`, a folder of images, a .npy/.npz; read by edgekit.data.calibration) are float; they are
quantized with the model's scale/zero point unless `raw_io` says they are already in the model's
dtype. Everything is prepared before timing starts, so the timed loop only calls the runtime.
"""

from __future__ import annotations

import numpy as np

from edgekit.core.errors import UsageError
from edgekit.core.layout import guess_layout
from edgekit.runtimes.base import Runtime, concrete_shape, quantize, random_array

MAX_BATCHES = 8  # distinct sample batches cycled through by the timed loop


def random_batches(rt: Runtime, batch: int = 1, seed: int = 0) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{s.name: random_array(s, rng, batch) for s in rt.inputs}]


def sample_batches(rt: Runtime, spec: str, batch: int = 1, raw_io: bool = False,
                   mean: list[float] | None = None, std: list[float] | None = None) -> list[dict[str, np.ndarray]]:
    """Up to MAX_BATCHES batches of real samples from SPEC, in each input's dtype."""
    if len(rt.inputs) != 1:
        raise UsageError(f"--input feeds single-input models; this one takes {[s.name for s in rt.inputs]}.",
                         hint="Profile with random inputs (leave out --input).")
    tspec = rt.inputs[0]
    shape = concrete_shape(tspec, batch)
    layout = tspec.layout or (guess_layout(tspec.shape) if len(tspec.shape) == 4 else "NC")
    try:
        from edgekit.data.calibration import load_samples
    except ImportError as exc:
        raise UsageError("Real inputs (--input) need edgekit.data.calibration, which this install lacks.",
                         hint="Reinstall edgekit, or profile with random inputs.") from exc
    data = load_samples(spec, shape, layout, mean=mean, std=std)
    x = np.asarray(data.x)
    if len(x) == 0:
        raise UsageError(f"--input {spec} gave no samples.")
    n_batches = max(1, min(MAX_BATCHES, len(x) // batch))
    idx = np.arange(n_batches * batch) % len(x)
    out = []
    for b in range(n_batches):
        xb = x[idx[b * batch : (b + 1) * batch]]
        if raw_io:
            if xb.dtype != np.dtype(tspec.dtype):
                raise UsageError(f"--raw-io: the samples are {xb.dtype.name} but input '{tspec.name}' takes "
                                 f"{tspec.dtype}.", hint="Leave out --raw-io to have them quantized.")
            out.append({tspec.name: np.ascontiguousarray(xb)})
        else:
            out.append({tspec.name: np.ascontiguousarray(quantize(xb.astype(np.float32), tspec))})
    return out
