"""Where P-Net's ONNX int8 and TFLite int8 part (issue 40): tensor by tensor against float, and the ONNX file edited.

Why: on 6,000 held-out scenes per distribution the ONNX int8 P-Net that `edgekit convert` makes trails its TFLite
int8 by a fraction of a point of proposal IoU (bench/int8_recovery.py --held-out). This says where: it reads the
artifacts that run made (OUT: `mtcnn_pnet.{fp32,int8}.{onnx,tflite}`) and its held-out scenes, and prints
- what the two int8 files hold: the int8 weights compared value by value, each activation's grid (scale, zero point);
- each tensor's error against the float model of its own format (RMS of the difference over RMS of the float
  tensor), on the first TENSOR_SCENES scenes: onnxruntime with the tensors made graph outputs, LiteRT with
  `experimental_preserve_all_tensors` (builtin kernels: XNNPACK does not keep its intermediates);
- the proposal IoU of ONNX files edited one difference at a time toward the TFLite file (the input's zero point,
  the max-pool's grid, LiteRT's int8 PReLU slopes) and of ones whose calibrated ranges are stretched by a few
  percent: each paired against the ONNX file as made and against the TFLite int8 (bench/int8_tasks.py
  `paired_difference`), so that a difference between the two artifacts can be set beside what an equally valid
  calibration moves.

    python bench/int8_recovery.py --only mtcnn_pnet --recipes default --held-out 6000 --work W
    python bench/pnet_int8_layers.py --work W/mtcnn_pnet --held-out 6000 [--json bench/results/pnet_int8_layers.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import int8_tasks  # noqa: E402  (beside this file)

# (float ONNX tensor, the ONNX int8 tensor that holds it, LiteRT tensor name's start) in graph order; the int8
# ONNX's PReLU before the pool and its outputs are float tensors of their own name
TENSORS = (("input", "input_DequantizeLinear_Output", "serving_default_input"),
           ("conv2d", "conv2d_DequantizeLinear_Output", "model/tf.math.add/Add;"),
           ("prelu", "prelu", "model/tf.__operators__.add/AddV2;"),
           ("max_pool2d", "max_pool2d_DequantizeLinear_Output", "model/tf.nn.max_pool2d/"),
           ("conv2d_1", "conv2d_1_DequantizeLinear_Output", "model/tf.math.add_1/Add;"),
           ("prelu_1", "prelu_1_DequantizeLinear_Output", "model/tf.__operators__.add_1/AddV2;"),
           ("conv2d_2", "conv2d_2_DequantizeLinear_Output", "model/tf.math.add_2/Add;"),
           ("prelu_2", "prelu_2_DequantizeLinear_Output", "model/tf.__operators__.add_2/AddV2;"),
           ("output_0", "output_0", "PartitionedCall:0"),
           ("conv2d_4", "conv2d_4_DequantizeLinear_Output", "model/tf.math.add_4/Add;"),
           ("output_1", "output_1", "PartitionedCall:1"))
PRELU_SLOPES = (("val_1", "prelu"), ("val_3", "prelu_1"), ("val_4", "prelu_2"))  # ONNX slope, the PReLU's tensor
STRETCH = {"max_pool2d": (0.97, 1.03, 1.06), "prelu_2": (0.97, 1.03), "conv2d_4": (0.97, 1.03, 1.06)}


def onnx_tensors(model: Any, names: list[str], x: np.ndarray) -> dict[str, np.ndarray]:
    """NAMES of the ONNX MODEL (a ModelProto) made graph outputs, run one scene at a time (the batch is static)."""
    import onnx
    import onnxruntime as ort

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output} | {i.name for i in m.graph.input}
    m.graph.output.extend(onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in names
                          if n not in have)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    outs = [n for n in names if n != "input"]
    got: dict[str, list[np.ndarray]] = {n: [] for n in outs}
    for i in range(len(x)):
        for n, v in zip(outs, sess.run(outs, {"input": x[i:i + 1]}), strict=True):
            got[n].append(v)
    return {"input": x, **{n: np.concatenate(v) for n, v in got.items()}}


def litert_tensors(path: Path, starts: list[str], x: np.ndarray) -> dict[str, np.ndarray]:
    """The LiteRT tensors whose names begin with STARTS (activations: 4-D), dequantized, NCHW, on X (NCHW float)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(str(path), experimental_preserve_all_tensors=True, num_threads=1,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    details = [d for d in it.get_tensor_details() if len(d["shape"]) == 4]
    pick = {s: next(d for d in details if d["name"].startswith(s)) for s in starts}
    inp = it.get_input_details()[0]
    got: dict[str, list[np.ndarray]] = {s: [] for s in starts}
    for sample in x.transpose(0, 2, 3, 1):
        v = sample[None]
        if inp["dtype"] != np.float32:  # as edgekit's runtimes quantize a float input (runtimes/base.py)
            scale, zp = inp["quantization"]
            info = np.iinfo(inp["dtype"])
            v = np.clip(np.round(v / scale + zp), info.min, info.max).astype(inp["dtype"])
        it.set_tensor(inp["index"], v)
        it.invoke()
        for s, d in pick.items():
            t = it.get_tensor(d["index"])
            if t.dtype != np.float32:
                q = d["quantization_parameters"]
                t = (t.astype(np.float32) - q["zero_points"][0]) * q["scales"][0]
            got[s].append(t[0].transpose(2, 0, 1))
    return {s: np.stack(v) for s, v in got.items()}


def relative(q: np.ndarray, f: np.ndarray) -> float:
    return round(float(np.sqrt(np.mean((q - f) ** 2)) / np.sqrt(np.mean(f ** 2))), 5)


def litert_grids(path: Path) -> dict[str, Any]:
    """{tensor name: (scale, zero point as uint8, or per-channel scales)} of every quantized LiteRT tensor, and its
    int8 values by index (the weights)."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(str(path))
    it.allocate_tensors()
    out = {}
    for d in it.get_tensor_details():
        q = d["quantization_parameters"]
        if len(q["scales"]):
            try:
                value = it.get_tensor(d["index"])
            except ValueError:  # an activation: no data before a run
                value = None
            out[d["name"]] = {"index": d["index"], "scales": q["scales"], "zero_points": q["zero_points"],
                              "shape": tuple(d["shape"]), "value": value}
    return out


def file_facts(onnx_int8: Any, tfl: dict[str, Any]) -> dict[str, Any]:
    """The two int8 files side by side: each Conv's int8 weights compared, each activation's grid."""
    from onnx import numpy_helper

    init = {i.name: numpy_helper.to_array(i) for i in onnx_int8.graph.initializer}
    weights = {}
    for conv in ("conv1", "conv2", "conv3", "conv4_1", "conv4_2"):
        q = init[f"{conv}.weight_quantized"].astype(np.int32)
        twin = next(t for t in tfl.values() if t["shape"] == tuple(np.transpose(q, (0, 2, 3, 1)).shape)
                    and t["value"] is not None and len(t["scales"]) == q.shape[0])
        weights[conv] = {"values_differing": int((q != np.transpose(twin["value"], (0, 3, 1, 2))).sum()),
                         "of": int(q.size), "scales_equal": bool(np.allclose(init[f"{conv}.weight_scale"],
                                                                             twin["scales"], rtol=1e-6))}
    grids = {}
    for name, int8_name, start in TENSORS:
        key = "input" if name == "input" else int8_name.removesuffix("_DequantizeLinear_Output")
        onnx_grid = ((float(init[f"{key}_scale"]), int(init[f"{key}_zero_point"])) if f"{key}_scale" in init
                     else None)
        t = next((v for k, v in tfl.items() if k.startswith(start) and len(v["shape"]) == 4), None)
        tfl_grid = (float(t["scales"][0]), int(t["zero_points"][0]) + 128) if t is not None else None
        grids[name] = {"onnx": onnx_grid, "tflite": tfl_grid}
    return {"weights": weights, "grids (scale, zero point as uint8)": grids}


def edited(model: Any, changes: dict[str, np.ndarray | float | int]) -> Any:
    """A copy of MODEL with the initializers CHANGES names replaced (same dtype and shape)."""
    import onnx
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for i in m.graph.initializer:
        if i.name in changes:
            old = numpy_helper.to_array(i)
            i.CopyFrom(numpy_helper.from_array(np.asarray(changes[i.name], old.dtype).reshape(old.shape), i.name))
    return m


def variants(model: Any, fp32: Any, tfl: dict[str, Any]) -> dict[str, Any]:
    """ONNX int8 files edited toward the TFLite one (one difference each, then all), and with one calibrated range
    stretched (its minimum kept)."""
    from onnx import numpy_helper

    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    slopes = {i.name: numpy_helper.to_array(i) for i in fp32.graph.initializer}
    by_start = {s: next(v for k, v in tfl.items() if k.startswith(s) and len(v["shape"]) == 4)
                for _, _, s in TENSORS}
    start_of = {name: s for name, _, s in TENSORS}
    inp, pool = by_start[start_of["input"]], by_start[start_of["prelu"]]
    toward: dict[str, dict[str, Any]] = {
        "input zero point as LiteRT's": {"input_zero_point": int(inp["zero_points"][0]) + 128},
        "max-pool on the PReLU's grid, as LiteRT's": {"max_pool2d_scale": float(pool["scales"][0]),
                                                       "max_pool2d_zero_point": int(pool["zero_points"][0]) + 128},
        "PReLU slopes rounded as LiteRT's int8": {}}
    for slope, prelu in PRELU_SLOPES:  # LiteRT's PRELU holds its slopes as int8 of one scale
        t = next(v for k, v in tfl.items() if k.startswith(start_of[prelu]) and len(v["shape"]) == 3)
        s, zp = float(t["scales"][0]), int(t["zero_points"][0])
        toward["PReLU slopes rounded as LiteRT's int8"][slope] = (np.clip(np.round(slopes[slope] / s) + zp, -128, 127)
                                                                 - zp) * s
    toward["all three"] = {k: v for change in list(toward.values()) for k, v in change.items()}
    out = {name: edited(model, change) for name, change in toward.items()}
    for tensor, factors in STRETCH.items():
        scale, zp = float(init[f"{tensor}_scale"]), int(init[f"{tensor}_zero_point"])
        for f in factors:
            out[f"{tensor} range x{f}"] = edited(model, {f"{tensor}_scale": scale * f,
                                                         f"{tensor}_zero_point": int(np.clip(round(zp / f), 0, 255))})
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, required=True, help="bench/int8_recovery.py's P-Net folder (WORK/mtcnn_pnet)")
    p.add_argument("--out-dir", default="out-default", help="the convert run's folder in WORK")
    p.add_argument("--held-out", type=int, default=int8_tasks.HELD_OUT["mtcnn_pnet"])
    p.add_argument("--tensor-scenes", type=int, default=1000, help="scenes per distribution for the tensor table")
    p.add_argument("--json", type=Path, default=Path(__file__).resolve().parent / "results" / "pnet_int8_layers.json")
    args = p.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import onnx

    out = args.work / args.out_dir
    model, fp32 = onnx.load(str(out / "mtcnn_pnet.int8.onnx")), onnx.load(str(out / "mtcnn_pnet.fp32.onnx"))
    tfl = litert_grids(out / "mtcnn_pnet.int8.tflite")
    doc: dict[str, Any] = {"benchmark": "pnet_int8_layers", "issue": 40, "artifacts": str(args.out_dir),
                           "files": file_facts(model, tfl), "tensors": {}, "variants": {}}
    print(json.dumps(doc["files"], indent=1))
    size = "" if args.held_out == int8_tasks.HELD_OUT["mtcnn_pnet"] else f"-{args.held_out}"
    edits = variants(model, fp32, tfl)
    for dist in ("A", "B"):
        x = np.load(args.work / f"mtcnn_pnet.heldout-{dist}{size}.npy")
        few = x[:args.tensor_scenes]
        of, oq = onnx_tensors(fp32, [t[0] for t in TENSORS], few), onnx_tensors(model, [t[1] for t in TENSORS], few)
        starts = [t[2] for t in TENSORS]
        tf_, tq = litert_tensors(out / "mtcnn_pnet.fp32.tflite", starts, few), litert_tensors(
            out / "mtcnn_pnet.int8.tflite", starts, few)
        rows = {name: {"onnx": relative(oq[q], of[name]), "tflite": relative(tq[s], tf_[s])} for name, q, s in TENSORS}
        doc["tensors"][dist] = {"scenes": len(few), "relative_rms_error": rows}
        print(f"{dist}: error against float, {len(few)} scenes\n" + "\n".join(
            f"  {k:11s} onnx {v['onnx']:.5f}  tflite {v['tflite']:.5f}" for k, v in rows.items()), flush=True)
        ref = int8_tasks.outputs(out / "mtcnn_pnet.fp32.onnx", "onnx", x, 1)
        tcells = int8_tasks.pnet_cells(int8_tasks.outputs(out / "mtcnn_pnet.fp32.tflite", "tflite", x, 1),
                                       int8_tasks.outputs(out / "mtcnn_pnet.int8.tflite", "tflite", x, 1))
        mine = int8_tasks.pnet_cells(ref, onnx_tensors(model, ["output_1"], x)["output_1"])
        doc["variants"][dist] = {"scenes": len(x), "as made": {
            "proposal_iou": round(float(mine[0].sum() / mine[1].sum()), 4),
            "minus_tflite": int8_tasks.paired_difference(mine, tcells)}}
        print(f"{dist}: ONNX as made {doc['variants'][dist]['as made']}", flush=True)
        for name, m in edits.items():
            cells = int8_tasks.pnet_cells(ref, onnx_tensors(m, ["output_1"], x)["output_1"])
            row = {"proposal_iou": round(float(cells[0].sum() / cells[1].sum()), 4),
                   "minus_as_made": int8_tasks.paired_difference(cells, mine),
                   "minus_tflite": int8_tasks.paired_difference(cells, tcells)}
            doc["variants"][dist][name] = row
            print(f"  {name}: IoU {row['proposal_iou']}, - as made {row['minus_as_made']['points']:+.2f} "
                  f"{row['minus_as_made']['ci95']}, - TFLite {row['minus_tflite']['points']:+.2f} "
                  f"{row['minus_tflite']['ci95']}", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.json.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
