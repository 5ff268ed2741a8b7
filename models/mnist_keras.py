"""The Keras twin of the bundled MNIST CNN (models/mnist_cnn.py), layer for layer.

TensorFlow/Keras users convert Keras models, so the toolchain needs a reference Keras model as
much as a PyTorch one: same architecture, same training data split, so that fidelity figures of
the two routes can be compared directly.

Input: float32 (N, 28, 28, 1) (channels last, the Keras convention), pixels scaled to [0, 1],
no mean/std. Output: 10 logits.
"""

from __future__ import annotations

from typing import Any

INPUT_SHAPE = (28, 28, 1)


def build(dropout: float = 0.25) -> Any:
    """A fresh, untrained model: conv 32 3x3, ReLU, maxpool 2; conv 64 3x3, ReLU, maxpool 2;
    dense 1600->128, ReLU, dropout; dense 128->10 (logits).

    Also the factory for weights-only files: `--model models.mnist_keras:build`.
    """
    import keras
    from keras import layers

    return keras.Sequential(
        [
            keras.Input(INPUT_SHAPE, name="image"),
            layers.Conv2D(32, 3, activation="relu", name="conv1"),  # 28 -> 26
            layers.MaxPooling2D(2, name="pool1"),  # 26 -> 13
            layers.Conv2D(64, 3, activation="relu", name="conv2"),  # 13 -> 11
            layers.MaxPooling2D(2, name="pool2"),  # 11 -> 5
            layers.Flatten(name="flatten"),
            layers.Dense(128, activation="relu", name="fc1"),
            layers.Dropout(dropout, name="dropout"),
            layers.Dense(10, name="logits"),
        ],
        name="mnist_cnn_keras",
    )
