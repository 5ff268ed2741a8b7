"""edgekit.core.batching: references and runtimes with a free batch run chunks bounded by input bytes."""

from __future__ import annotations

import numpy as np

from edgekit.core.batching import CHUNK_INPUT_BYTES, TF_CHUNK_INPUT_BYTES, rows_per_chunk


def test_small_samples_keep_the_count_cap() -> None:
    digits = np.zeros((1000, 1, 28, 28), np.float32)
    assert rows_per_chunk([digits], 256) == 256


def test_photos_run_in_chunks_of_a_few_megabytes() -> None:
    photos = np.zeros((300, 224, 224, 3), np.float32)  # 602 KB each: 256 of them were 154 MB of input
    rows = rows_per_chunk([photos], 256)
    assert rows == CHUNK_INPUT_BYTES // photos[0].nbytes == 13
    pages = np.zeros((10, 3, 320, 320), np.float32)
    masks = np.zeros((10, 1, 320, 320), np.float32)  # several inputs count together
    assert rows_per_chunk([pages, masks], 64) == CHUNK_INPUT_BYTES // (pages[0].nbytes + masks[0].nbytes)


def test_a_huge_sample_still_runs_one_at_a_time() -> None:
    assert rows_per_chunk([np.zeros((2, 3, 2048, 2048), np.float32)], 64) == 1
    assert rows_per_chunk([np.zeros((0, 3), np.float32)], 64) == 64  # nothing to size by: the cap


def test_a_smaller_budget_for_tensorflow_sources():
    photos = np.zeros((300, 224, 224, 3), np.float32)
    assert rows_per_chunk([photos], 256, TF_CHUNK_INPUT_BYTES) == TF_CHUNK_INPUT_BYTES // photos[0].nbytes == 3
    assert rows_per_chunk([np.zeros((9, 28, 28, 1), np.float32)], 256, TF_CHUNK_INPUT_BYTES) == 256  # small: the cap
