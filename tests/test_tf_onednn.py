"""edgekit turns TensorFlow's oneDNN kernels off by default: TF 2.21's oneDNN matmul corrupts the heap.

tensorflow/tensorflow#117700: a rank-4 x rank-2 tf.linalg.matmul aborts or segfaults the process with oneDNN on.
onnx2tf's MatMul layout search runs such products (ConvNeXt-V2 atto died in it). The repro below, from the
upstream issue, exits 134/135 without edgekit's default on this machine and 0 with it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("tensorflow")

REPRO = """
import edgekit
import tensorflow as tf
tf.random.set_seed(280958)
for _ in range(20):
    out = tf.linalg.matmul(tf.random.normal([13, 1, 3, 4]), tf.random.normal([4, 16]))
print(out.shape)
"""


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**base, "TF_CPP_MIN_LOG_LEVEL": "3", **env})


@pytest.mark.slow  # TensorFlow started in a child and run: seconds; the default itself is checked below, fast
def test_rank4_matmul_survives_with_edgekit_imported_first() -> None:
    done = _run(REPRO)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "(13, 1, 3, 16)" in done.stdout


def test_a_users_own_setting_is_kept() -> None:
    done = _run("import os, edgekit; print(os.environ['TF_ENABLE_ONEDNN_OPTS'])", TF_ENABLE_ONEDNN_OPTS="1")
    assert done.stdout.strip() == "1"
    done = _run("import os, edgekit; print(os.environ['TF_ENABLE_ONEDNN_OPTS'])")
    assert done.stdout.strip() == "0"
