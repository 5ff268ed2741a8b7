"""How many samples a reference model or a runtime runs at once when its batch is free.

Bounded by the bytes of one chunk's inputs, not by a count alone: 256 MNIST digits are 0.8 MB, but 256
photos of 224x224x3 are 154 MB of input and, through an EfficientNet, many GB of activations (Keras
sources reached 12-13 GB in the model zoo, PP-OCR's detector passed the zoo's 4 GB cap at 64 pages).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

CHUNK_INPUT_BYTES = 8 * 1024 * 1024  # a few hundred MB of activations for the CNNs edgekit converts
# TensorFlow sources (Keras, SavedModel): TF's allocator holds a chunk's activations in the heap after it, and
# chunks of a quarter the size took the same time (Keras ConvNeXt-T at 160x160, 200 samples: 40.5 s at 8 samples
# a chunk, 40.8 s at 32) for half the memory (1.15 against 2.25 GiB after 50 samples)
TF_CHUNK_INPUT_BYTES = 2 * 1024 * 1024


def rows_per_chunk(arrays: Iterable[np.ndarray], cap: int, budget: int = CHUNK_INPUT_BYTES) -> int:
    """Samples per chunk for inputs ARRAYS (each with the batch first): at most CAP, at least 1, and at most
    BUDGET bytes of input where a sample is smaller."""
    per_sample = sum(int(a[:1].nbytes) for a in arrays if a.ndim and len(a))
    if per_sample <= 0:
        return max(1, cap)
    return max(1, min(cap, budget // per_sample))


__all__ = ["CHUNK_INPUT_BYTES", "TF_CHUNK_INPUT_BYTES", "rows_per_chunk"]
