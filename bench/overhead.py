"""What `edgekit profile` adds to the latency it reports, against a bare loop calling the runtime directly.

Both run in this one process on the same artifact, in interleaved blocks (edgekit first in even
blocks, the bare loop first in odd ones) so that drift (thermal, other processes) hits both alike.
The edgekit side is `edgekit.measure.profile.profile_artifact` itself, the function behind `edgekit profile`;
the bare side is the vendor API in the tightest loop a user would write (its own session/interpreter,
inputs prepared once, each call timed with perf_counter_ns). Each block's p50 is compared with the
adjacent block of the other side: `ratio` is the median of these paired ratios (target <= 1.03), which
cancels the drift of a shared machine; `ratio_of_medians` (median of edgekit's block p50s over the
median of the bare loop's) is reported beside it, with every block's figures.

Usage (after `pip install -e '.[all]'`):
    python bench/overhead.py                       # makes a small CNN (ONNX) and measures it
    python bench/overhead.py --artifact model.tflite --blocks 12 --runs 3000 --json overhead.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def bare_call(path: Path, fmt: str, feed: dict[str, np.ndarray], threads: int | None) -> Callable[[], Any]:
    """One inference through the vendor API, as a user would write it (same thread count as edgekit's side)."""
    if fmt == "onnx":
        import onnxruntime as ort

        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
        sess = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return lambda: sess.run(names, feed)
    if fmt == "tflite":
        from ai_edge_litert.interpreter import Interpreter

        it = Interpreter(model_path=str(path), num_threads=threads)
        it.allocate_tensors()
        ins = [(d["index"], feed[d["name"]]) for d in it.get_input_details()]
        outs = [d["index"] for d in it.get_output_details()]

        def call() -> list[np.ndarray]:
            for i, x in ins:
                it.set_tensor(i, x)
            it.invoke()
            return [it.get_tensor(i) for i in outs]

        return call
    raise SystemExit(f"bench/overhead.py measures .onnx and .tflite artifacts, not {fmt}")


def bare_p50(call: Callable[[], Any], runs: int, warmup: int) -> float:
    for _ in range(warmup):
        call()
    pc = time.perf_counter_ns
    times = [0] * runs
    for i in range(runs):
        t0 = pc()
        call()
        times[i] = pc() - t0
    return float(np.percentile(np.asarray(times, dtype=np.float64) / 1e6, 50))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", type=Path, help=".onnx or .tflite (default: a small CNN made here)")
    ap.add_argument("--blocks", type=int, default=20, help="interleaved blocks of each side")
    ap.add_argument("--runs", type=int, default=1000, help="timed runs per block")
    ap.add_argument("--threads", type=int, default=1, help="runtime threads, both sides (1: least scheduler noise)")
    ap.add_argument("--warmup", type=int, default=100, help="untimed runs per block")
    ap.add_argument("--json", type=Path, dest="json_out", help="write {ratio, edgekit_p50_ms, bare_p50_ms, ...}")
    args = ap.parse_args(argv)

    from edgekit.measure.profile import profile_artifact
    from edgekit.measure.settings import MeasureSettings
    from edgekit.runtimes import detect_format, open_runtime
    from edgekit.runtimes.inputs import random_batches

    path = args.artifact
    if path is None:
        from edgekit.testing import tiny_cnn

        folder = Path(tempfile.gettempdir()) / "edgekit-overhead-models"
        print(f"making a small CNN in {folder} ...", file=sys.stderr)
        index = tiny_cnn.build(folder)
        path = Path(index["models"].get("onnx") or index["models"]["tflite-fp32"])
    fmt = detect_format(path)
    rt = open_runtime(path, device="cpu")
    feed = random_batches(rt, 1, seed=0)[0]  # the same data profile_artifact feeds (seed 0)
    rt.close()
    bare = bare_call(path, fmt, feed, args.threads)
    settings = MeasureSettings(runs=args.runs, min_seconds=0.0, warmup=args.warmup, threads=args.threads)
    ek, bb = [], []
    for block in range(args.blocks):
        order = ("edgekit", "bare") if block % 2 == 0 else ("bare", "edgekit")
        for side in order:
            if side == "edgekit":
                ek.append(profile_artifact(path, device="cpu", settings=settings).latency_ms.p50)
            else:
                bb.append(bare_p50(bare, args.runs, args.warmup))
        print(f"block {block + 1}/{args.blocks}: edgekit p50 {ek[-1]:.4f} ms, bare p50 {bb[-1]:.4f} ms",
              file=sys.stderr)
    e, b = statistics.median(ek), statistics.median(bb)
    paired = statistics.median(x / y for x, y in zip(ek, bb, strict=True))  # each block against its neighbour
    result = {"ratio": paired, "edgekit_p50_ms": e, "bare_p50_ms": b, "ratio_of_medians": e / b,
              "artifact": str(path), "format": fmt, "threads": args.threads, "blocks": args.blocks,
              "runs_per_block": args.runs, "edgekit_block_p50_ms": ek, "bare_block_p50_ms": bb}
    print(f"{path.name}: edgekit profile p50 {e:.4f} ms, bare loop p50 {b:.4f} ms; ratio (median of paired "
          f"blocks) {paired:.4f}, {'within' if paired <= 1.03 else 'ABOVE'} the 1.03 target; ratio of medians "
          f"{e / b:.4f}")
    if args.json_out:
        from edgekit.core.fsutil import atomic_write_json

        atomic_write_json(args.json_out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
