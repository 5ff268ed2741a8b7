"""Edge TPU coverage of a float .tflite with and without the Edge TPU graph fixes (issue 41: attention hybrids).

For each FILE (a float .tflite, e.g. the `*.fp32.tflite` of an `edgekit convert` run) and calibration samples, the
model is quantized to full int8 with uint8 I/O (as `--target edgetpu` makes it) with no fixes and with all of
`edgekit.edgetpu.fixes.FIXES`; each is pre-flighted and printed as one JSON line: ops and MACs predicted on the TPU,
where and why mapping stops, and what the fixes tried there. With --ops N, the N ops from the partition point on are
listed, each with its own reason. The edgekit imported is the one on sys.path: run it with PYTHONPATH set to another
checkout's root to measure that checkout's fixes (the before and after of a change).

    python bench/zoo_edgetpu_coverage.py out/efficientformerv2_s0/timm_efficientformerv2_s0.fp32.tflite \\
        --calib photos224.npz --calib-size 56

The pre-flight predicts from Coral's documented rules (no edgetpu_compiler here): see docs/edgetpu.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np


def _samples(calib: Path | None, shape: list[int], n: int) -> np.ndarray:
    """N samples in SHAPE (NHWC): from CALIB (an .npz, NCHW or NHWC) or standard normal values."""
    if calib is None:
        return np.random.default_rng(0).standard_normal((n, *shape[1:])).astype(np.float32)
    x = np.load(calib)
    arr = x[x.files[0]][:n].astype(np.float32)
    if list(arr.shape[1:]) != list(shape[1:]) and arr.ndim == 4:
        arr = arr.transpose(0, 2, 3, 1)
    return arr


def coverage(blob: bytes, xs: np.ndarray, folder: Path, label: str, only: tuple[str, ...],
             show: int = 0) -> dict[str, Any]:
    """BLOB with the fixes ONLY ((): none) quantized on XS and pre-flighted."""
    import tensorflow as tf

    from edgekit.edgetpu.fixes import apply_fixes
    from edgekit.edgetpu.preflight import preflight
    from edgekit.tflite.cache import calibrated, full_integer

    fixed, report = apply_fixes(blob, only=only) if only != () else (blob, None)
    cal = calibrated(fixed, lambda: ([x[None]] for x in xs), f"coverage-{len(xs)}", None)
    path = folder / f"{label}.int8.tflite"
    path.write_bytes(full_integer(tf, cal, tf.uint8))
    pf = preflight(path)
    first = pf.first_unsupported
    row: dict[str, Any] = {
        "fixes": label, "applied": report.applied if report else {}, "ops_on_tpu": pf.ops_on_tpu,
        "ops_total": pf.ops_total, "macs_on_tpu": pf.macs_on_tpu, "macs_total": pf.macs_total,
        "macs_on_tpu_fraction": pf.macs_on_tpu_fraction,
        "stops_at": None if first is None else f"op {first.index} {first.op}: {first.reason}",
        "tried": getattr(first, "tried", None),  # None from a checkout before the field existed
    }
    if show and first is not None:
        own = [(e.own_reason or "would map") if e.code == "after_partition" else e.reason
               for e in pf.ops[first.index:first.index + show]]
        row["from_the_stop"] = [f"{e.index} {e.op}: {why}" for e, why in zip(pf.ops[first.index:], own, strict=False)]
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--calib", type=Path, default=None, help=".npz of samples (NCHW or NHWC); default: random")
    ap.add_argument("--calib-size", type=int, default=32)
    ap.add_argument("--ops", type=int, default=0, help="list this many ops from the partition point on")
    ap.add_argument("--out", type=Path, default=Path("coverage"))
    args = ap.parse_args(argv)

    from edgekit.edgetpu.fixes import FIXES
    from edgekit.tflite.model import read_tflite

    for f in args.files:
        folder = args.out / f.stem
        folder.mkdir(parents=True, exist_ok=True)
        model = read_tflite(f)
        shape = model.tensors[model.inputs[0]].static_shape
        xs = _samples(args.calib, list(shape), args.calib_size)
        blob = f.read_bytes()
        for label, only in (("none", ()), ("all", tuple(FIXES))):
            print(json.dumps({"model": f.name, **coverage(blob, xs, folder, label, only, args.ops)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
