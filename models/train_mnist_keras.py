"""Train the Keras twin of the bundled MNIST CNN and write it as a .keras archive and a SavedModel.

The committed files in models/ come from this script, so anyone can check where the weights came
from and reproduce them: the same 4,000 real training digits as the PyTorch model
(edgekit.data.calibration's fixed split), seed 0 (keras.utils.set_random_seed, deterministic TF ops),
Adam with cosine decay, and random shifts of up to 2 pixels each epoch (Keras's default Glorot
initialisation plateaus at 96-97% on 4,000 digits without them; with them the last epochs sit at
97.4%). The 1,000 held-out digits are only evaluated.

    python models/train_mnist_keras.py            # from the repo root; about 90 s on 2 CPU cores
    python models/train_mnist_keras.py --out-dir /tmp/m --epochs 3

Writes mnist_cnn_keras.keras (Keras 3 archive), mnist_cnn_keras_savedmodel/ (model.export, dynamic
batch, signature serving_default) and mnist_cnn_keras.json (accuracy, settings, versions, digests),
after loading each form back through edgekit's own loaders and checking it gives the trained
model's logits.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python models/train_mnist_keras.py` puts models/, not the root, on sys.path
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from edgekit.core.fsutil import atomic_write_json, publish, sha256_file  # noqa: E402
from edgekit.data.calibration import mnist_split  # noqa: E402
from edgekit.sources.base import LoadOptions  # noqa: E402
from models.mnist_keras import build  # noqa: E402

KERAS_FILE = "mnist_cnn_keras.keras"
SAVEDMODEL_DIR = "mnist_cnn_keras_savedmodel"
INFO_FILE = "mnist_cnn_keras.json"
SEED = 0
EPOCHS = 20
BATCH = 64
LR = 1e-3  # peak of the cosine decay to 0 over all steps
SHIFT = 2  # augmentation: each epoch, each digit is shifted by up to this many pixels in x and y
MIN_ACCURACY = 0.97
AGREE_ATOL = 1e-4  # reloaded forms must reproduce the trained model's logits this closely


def to_input(x_u8: np.ndarray) -> np.ndarray:
    """uint8 (N, 28, 28) digits -> the model's input: float32 (N, 28, 28, 1) in [0, 1]."""
    return (x_u8.astype(np.float32) / np.float32(255.0))[..., None]


def shifted(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """X with each digit rolled by a random -SHIFT..SHIFT pixels in y and x (MNIST borders are blank)."""
    out = np.empty_like(x)
    for i, (dy, dx) in enumerate(rng.integers(-SHIFT, SHIFT + 1, size=(len(x), 2))):
        out[i] = np.roll(x[i], (int(dy), int(dx)), axis=(0, 1))
    return out


def train(epochs: int):  # -> tuple[keras.Model, float]
    """Train from seed 0 on the 4,000 training digits; the model and seconds taken."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(SEED)
    tf.config.experimental.enable_op_determinism()
    x_train, y_train, _, _ = mnist_split()
    x, y = to_input(x_train), y_train.astype(np.int64)
    steps = epochs * -(-len(x) // BATCH)
    model = build()
    model.compile(optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(LR, steps)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    rng = np.random.default_rng(SEED)
    start = time.perf_counter()
    for epoch in range(epochs):
        hist = model.fit(shifted(x, rng), y, batch_size=BATCH, epochs=1, shuffle=True, verbose=0)
        print(f"epoch {epoch + 1}/{epochs}: loss {hist.history['loss'][-1]:.4f} "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
    # An uncompiled copy: a compiled model's archive also carries the optimizer state (3x the size)
    # and a compile config (loss), neither of which inference or conversion needs.
    trained = build()
    trained.set_weights(model.get_weights())
    return trained, time.perf_counter() - start


def save(model, out_dir: Path) -> tuple[Path, Path]:
    """Write the archive and the SavedModel, each complete in a scratch folder first, then moved in."""
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".train-mnist-keras-", dir=out_dir))
    try:
        model.save(scratch / KERAS_FILE)
        model.export(str(scratch / SAVEDMODEL_DIR), format="tf_saved_model", verbose=False)
        keras_path = publish(scratch / KERAS_FILE, out_dir / KERAS_FILE)
        sm_path = out_dir / SAVEDMODEL_DIR
        old = scratch / "previous"
        if sm_path.exists():
            os.replace(sm_path, old)  # the folder swap: old out, new in; the old one is removed after
        os.replace(scratch / SAVEDMODEL_DIR, sm_path)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return keras_path, sm_path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=ROOT / "models")
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    args = ap.parse_args(argv)

    import keras
    import tensorflow as tf

    from edgekit.sources import keras as keras_source
    from edgekit.sources import savedmodel as savedmodel_source

    model, seconds = train(args.epochs)
    _, _, x_test, y_test = mnist_split()
    xt = to_input(x_test)
    reference = np.asarray(model(xt, training=False), dtype=np.float32)
    accuracy = float(np.mean(reference.argmax(1) == y_test))
    print(f"test accuracy on {len(y_test)} held-out digits: {accuracy:.4f}")
    if accuracy < MIN_ACCURACY:
        print(f"error: accuracy {accuracy:.4f} is below {MIN_ACCURACY}; nothing written.", file=sys.stderr)
        return 1

    keras_path, sm_path = save(model, args.out_dir)
    reloaded = {
        keras_path.name: keras_source.load(keras_path, LoadOptions(), "keras"),
        sm_path.name: savedmodel_source.load(sm_path, LoadOptions(), "savedmodel"),
    }
    diffs = {}
    for name, src in reloaded.items():
        diffs[name] = float(np.max(np.abs(src.predict(xt) - reference)))
        print(f"{name}: max |logit diff| {diffs[name]:.2e} after loading it back with edgekit")
    bad = {k: d for k, d in diffs.items() if not d <= AGREE_ATOL}
    if bad:
        print(f"error: reloaded files disagree with the trained model: {bad}", file=sys.stderr)
        return 1

    info = {
        "test_accuracy": accuracy,
        "train_samples": int(len(mnist_split()[0])),
        "test_samples": int(len(y_test)),
        "seed": SEED,
        "epochs": args.epochs,
        "batch_size": BATCH,
        "optimizer": f"Adam, cosine decay from lr={LR}",
        "augmentation": f"random shifts of up to {SHIFT} px in x and y, new each epoch",
        "train_seconds": round(seconds, 1),
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        "input": {"shape": [-1, 28, 28, 1], "dtype": "float32", "layout": "NHWC", "range": [0.0, 1.0],
                  "mean": None, "std": None, "name": reloaded[keras_path.name].input_name},
        "output": {"shape": [-1, 10], "meaning": "logits of digits 0-9"},
        "savedmodel_signature": "serving_default",
        "reload_max_abs_diff": diffs,
        "sha256": {keras_path.name: sha256_file(keras_path), sm_path.name: savedmodel_source.tree_sha256(sm_path)},
    }
    atomic_write_json(args.out_dir / INFO_FILE, info)
    print(json.dumps({k: info[k] for k in ("test_accuracy", "epochs", "train_seconds")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
