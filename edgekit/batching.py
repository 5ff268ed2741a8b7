"""How many samples a reference model or a runtime runs at once when its batch is free.

Bounded by the bytes of one chunk's inputs, not by a count alone: 256 MNIST digits are 0.8 MB, but 256
photos of 224x224x3 are 154 MB of input and, through an EfficientNet, many GB of activations (Keras
sources reached 12-13 GB in the model zoo, PP-OCR's detector passed the zoo's 4 GB cap at 64 pages).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

CHUNK_INPUT_BYTES = 8 * 1024 * 1024  # a few hundred MB of activations for the CNNs edgekit converts


def rows_per_chunk(arrays: Iterable[np.ndarray], cap: int) -> int:
    """Samples per chunk for inputs ARRAYS (each with the batch first): at most CAP, at least 1."""
    per_sample = sum(int(a[:1].nbytes) for a in arrays if a.ndim and len(a))
    if per_sample <= 0:
        return max(1, cap)
    return max(1, min(cap, CHUNK_INPUT_BYTES // per_sample))


__all__ = ["CHUNK_INPUT_BYTES", "rows_per_chunk"]
