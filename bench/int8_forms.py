"""ONNX int8 forms side by side on onnxruntime at 1 thread: which one this CPU runs fast and exact (issue 40).

The same fp32 ONNX quantized by edgekit's own quantize call (edgekit.quantize.onnx.ort, MinMax, per-channel unless
named) in each form of edgekit.quantize.cpu_forms' table and the forms around it:
- S8S8 7-bit: int8 activations, 7-bit int8 weights (reduce_range): what edgekit made before `--for`;
- S8S8 8-bit: the Arm rows; U8S8 7-bit: the x86-64-without-VNNI row; U8S8 8-bit: the x86-64-VNNI row;
- U8S8 8-bit per tensor; U8U8 8-bit (the `uint8` recipe);
- S8S8 8-bit run with onnxruntime's session option `session.qdqisint8allowed=1` (a runtime knob, not a form: it lets
  x86 fuse int8 activations as Arm does);
beside the fp32 ONNX and the LiteRT int8 .tflite of `edgekit convert --target onnx,tflite --quantize fp32,int8`,
and the ONNX and LiteRT int8 artifacts of that conversion with today's defaults (auto within the default budget,
--for host) and with the old ones (`--int8-recipe plain`, S8S8 7-bit ONNX), so that the gain is a ratio of one run.

Models: the bundled MNIST CNN (calibrated on 200 training digits, judged on the 1,000 test digits) and a MobileNetV2
at 224 in plain torch (bench/ncnn_compare.py's; BatchNorm statistics from photo crops), calibrated on 100 crops of
scikit-image's photos and judged on 200 other crops. Fidelity: top-1 agreement with the fp32 ONNX.

Timing: one process, every variant's session at 1 thread (intra and inter op), batch 1; ROUNDS interleaved rounds,
each running every variant RUNS times in a rotated order; the median and p10/p90 of every run. Then, for the S8S8
and U8S8 forms, onnxruntime's own per-node profile and its optimized graph: which kernels run, how much time each
op type takes, how many Q/DQ nodes are left unfused.

Usage (from the repository root, after `pip install -e '.[all]'`):
    python bench/int8_forms.py [--work DIR] [--models cnn,mobilenetv2] [--rounds 15]
Writes bench/results/int8_forms.json (or --out) and prints the tables docs/results/int8-forms.md quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO))

# label -> (activations, unsigned weights, reduce_range, per_channel, session options)
FORMS: dict[str, tuple[str, bool, bool, bool, dict[str, str]]] = {
    "S8S8 7-bit (before --for)": ("int8", False, True, True, {}),
    "S8S8 8-bit (arm64 rows)": ("int8", False, False, True, {}),
    "U8S8 7-bit (x86-64 row)": ("uint8", False, True, True, {}),
    "U8S8 8-bit (x86-64-vnni row)": ("uint8", False, False, True, {}),
    "U8S8 8-bit per tensor": ("uint8", False, False, False, {}),
    "U8U8 8-bit (uint8 recipe)": ("uint8", True, False, True, {}),
    "S8S8 8-bit + qdqisint8allowed": ("int8", False, False, True, {"session.qdqisint8allowed": "1"}),
}
PROFILED = ("S8S8 7-bit (before --for)", "S8S8 8-bit (arm64 rows)", "U8S8 8-bit (x86-64-vnni row)",
            "S8S8 8-bit + qdqisint8allowed")


def log(msg: str) -> None:
    print(f"> {msg}", file=sys.stderr, flush=True)


# --- the models and their samples ------------------------------------------------------------------------------
def photo_crops(folder: Path, per_photo: int, seed: int) -> Path:
    """PER_PHOTO square crops (50-100% of the short side) of each of the test suite's photos, seeded."""
    from PIL import Image
    from skimage import data as skdata

    from tests.test_mobilenetv2 import PHOTOS

    if folder.is_dir() and any(folder.iterdir()):
        return folder
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for name in PHOTOS:
        img = np.asarray(getattr(skdata, name)())
        img = np.stack([img] * 3, -1) if img.ndim == 2 else img[..., :3]
        h, w = img.shape[:2]
        for j in range(per_photo):
            s = int(min(h, w) * rng.uniform(0.5, 1.0))
            y, x = int(rng.integers(0, h - s + 1)), int(rng.integers(0, w - s + 1))
            Image.fromarray(img[y:y + s, x:x + s].astype(np.uint8)).save(folder / f"{name}_{j}.png")
    return folder


@dataclass
class Model:
    name: str
    src: Path
    calib: str  # what `edgekit convert --calib` reads
    x_calib: np.ndarray
    x_val: np.ndarray
    variants: dict[str, Callable[[np.ndarray], np.ndarray]] = field(default_factory=dict)


def cnn(work: Path) -> Model:
    from edgekit.data.calibration import load_samples

    x = load_samples("mnist", [1, 1, 28, 28], "NCHW").x.astype(np.float32)
    return Model("mnist_cnn", REPO / "models" / "mnist_cnn.pt2", "mnist", x[:200], x[4000:5000])


def mobilenet(work: Path) -> Model:
    from bench.ncnn_compare import build_mobilenet
    from edgekit.data.calibration import load_samples

    src, _ = build_mobilenet(work)
    calib = photo_crops(work / "calib_crops", 10, seed=1)
    val = photo_crops(work / "val_crops", 20, seed=2)
    xc = load_samples(str(calib), [1, 3, 224, 224], "NCHW").x.astype(np.float32)
    xv = load_samples(str(val), [1, 3, 224, 224], "NCHW").x.astype(np.float32)
    return Model("mobilenetv2_224", src, str(calib), xc, xv)


MODELS = {"cnn": cnn, "mobilenetv2": mobilenet}


# --- the artifacts ---------------------------------------------------------------------------------------------
def convert(m: Model, work: Path, how: str = "default") -> dict[str, Any]:
    """The artifacts of `edgekit convert` (reused when already there) with today's defaults (HOW "default": auto
    within the default budget, --for host) or the old ones ("old": --int8-recipe plain and the S8S8 7-bit ONNX form,
    bench/int8_tasks.py's OLD_FORM), with the int8 record and the conversion's seconds."""
    from bench.int8_tasks import DEFAULTS, OLD_FORM

    out = work / (m.name if how == "default" else f"{m.name}-{how}")
    manifest = out / "manifest.json"
    seconds = None
    if not manifest.is_file():
        launch = [sys.executable, "-c", OLD_FORM] if how == "old" else [str(BIN / "edgekit")]
        cmd = [*launch, "convert", str(m.src), "--target", "onnx,tflite", "--quantize", "fp32,int8",
               "--calib", m.calib, *DEFAULTS[how], "--out", str(out), "--force"]
        log(" ".join(cmd[1:]))
        env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        seconds = round(time.perf_counter() - t0, 1)
        if not manifest.is_file():
            raise SystemExit(f"convert failed: {proc.stderr[-2000:]}")
    arts = json.loads(manifest.read_text())["artifacts"]
    found = {f"{a['format']}-{a['precision']}": out / a["path"] for a in arts if a.get("status") == "ok"}
    recipes = {f"{a['format']}-{a['precision']}": (a.get("extra") or {}).get("int8_recipe") or {} for a in arts}
    return {"onnx_fp32": found["onnx-fp32"], "onnx_int8": found["onnx-int8"], "tflite_int8": found["tflite-int8"],
            "seconds": seconds, "chosen": {k: r.get("chosen") for k, r in recipes.items() if r},
            "trials": {k: [(t["recipe"], t.get("seconds")) for t in r.get("trials", [])]
                       for k, r in recipes.items() if r}}


def quantize_forms(m: Model, fp32: Path, work: Path) -> dict[str, Path]:
    """FORMS' QDQ models of FP32, each from edgekit's own quantize call on the same calibration samples."""
    from edgekit.quantize.onnx.recipes import OnnxRecipeConfig, QuantData, quantize
    from edgekit.steps.onnx_quantize import _pre_process

    folder = work / m.name / "forms"
    folder.mkdir(parents=True, exist_ok=True)
    pre = folder / "pre.onnx"
    _pre_process(fp32, pre, log)
    import onnx

    name = onnx.load(str(pre), load_external_data=False).graph.input[0].name
    made: dict[str, Path] = {}
    for label, (act, unsigned, reduce_range, per_channel, _) in FORMS.items():
        key = (act, unsigned, reduce_range, per_channel)
        dst = folder / ("q_" + "_".join(str(k) for k in key) + ".onnx")
        if not dst.is_file():
            config = OnnxRecipeConfig(activations=act, unsigned=unsigned, reduce_range=reduce_range,
                                      per_channel=per_channel)
            t0 = time.perf_counter()
            quantize(pre, dst, QuantData(name, m.x_calib, 1, folder), config)
            log(f"{m.name}: {label} quantized in {time.perf_counter() - t0:.1f} s")
        made[label] = dst
    return made


def ort_session(path: Path, config: dict[str, str], profile: Path | None = None) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    if profile is not None:
        so.enable_profiling = True
        so.profile_file_prefix = str(profile / "ort")
        so.optimized_model_filepath = str(profile / "optimized.onnx")
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_runner(sess: Any) -> Callable[[np.ndarray], np.ndarray]:
    name = sess.get_inputs()[0].name
    return lambda x: sess.run(None, {name: x})[0]


def litert_runner(path: Path) -> Callable[[np.ndarray], np.ndarray]:
    """The int8 .tflite at 1 thread, fed NCHW float samples (quantized and laid out as it wants)."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path), num_threads=1)
    it.allocate_tensors()
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    scale, zero = inp["quantization"]
    oscale, ozero = out["quantization"]
    nhwc = list(inp["shape"][1:3]) != [1, 1] and inp["shape"][-1] in (1, 3)

    def run(x: np.ndarray) -> np.ndarray:
        x = x.transpose(0, 2, 3, 1) if nhwc else x
        if scale:
            info = np.iinfo(inp["dtype"])
            x = np.clip(np.round(x / scale + zero), info.min, info.max)
        it.set_tensor(inp["index"], x.astype(inp["dtype"]))
        it.invoke()
        y = it.get_tensor(out["index"]).astype(np.float32)
        return (y - ozero) * oscale if oscale else y

    return run


# --- measure ---------------------------------------------------------------------------------------------------
def outputs(run: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    return np.concatenate([run(x[i:i + 1]).reshape(1, -1) for i in range(len(x))])


def fidelity(y: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    """Top-1 agreement with the fp32 ONNX, and the mean cosine of the outputs (steadier on near-tie classes)."""
    cos = np.sum(y * ref, 1) / (np.linalg.norm(y, axis=1) * np.linalg.norm(ref, axis=1) + 1e-12)
    return {"top1_agreement": round(float(np.mean(y.argmax(1) == ref.argmax(1))), 4),
            "cosine": round(float(np.mean(cos)), 5)}


def timings(variants: dict[str, Callable[[np.ndarray], np.ndarray]], x: np.ndarray, rounds: int, runs: int
            ) -> dict[str, dict[str, float]]:
    """Every variant RUNS times a round, ROUNDS rounds, the order rotated each round: per-run milliseconds."""
    names = list(variants)
    times: dict[str, list[float]] = defaultdict(list)
    for name in names:  # warm up: first runs allocate and pack weights
        for _ in range(3):
            variants[name](x)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            run = variants[name]
            for _ in range(runs):
                t0 = time.perf_counter()
                run(x)
                times[name].append((time.perf_counter() - t0) * 1e3)
    return {n: {"p50_ms": round(float(np.median(t)), 4), "p10_ms": round(float(np.percentile(t, 10)), 4),
                "p90_ms": round(float(np.percentile(t, 90)), 4), "runs": len(t)} for n, t in times.items()}


def profile(path: Path, config: dict[str, str], x: np.ndarray, folder: Path, runs: int = 50) -> dict[str, Any]:
    """onnxruntime's optimized graph (op types after fusion) and per-node profile (ms per op type, per run)."""
    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    sess = ort_session(path, config, profile=folder)
    run = ort_runner(sess)
    for _ in range(runs):
        run(x)
    trace = json.loads(Path(sess.end_profiling()).read_text())
    optimized = onnx.load(str(folder / "optimized.onnx"), load_external_data=False)
    ops = Counter(n.op_type for n in optimized.graph.node)
    per_op: dict[str, float] = defaultdict(float)
    for ev in trace:
        if ev.get("cat") == "Node" and str(ev.get("name", "")).endswith("_kernel_time"):
            per_op[ev["args"].get("op_name", "?")] += ev["dur"] / 1e3 / runs
    total = sum(per_op.values())
    return {"graph_ops": dict(ops.most_common()), "ms_per_run_by_op": {k: round(v, 4) for k, v in
                                                                       sorted(per_op.items(), key=lambda kv: -kv[1])},
            "kernel_ms_per_run": round(total, 4)}


# the rows of `edgekit convert` as a user gets them: today's defaults, and the old ones (issue 40's ratio)
CONVERTED = {"ONNX int8, defaults (auto, --for host)": ("default", "onnx_int8"),
             "ONNX int8, old defaults (plain, S8S8 7-bit)": ("old", "onnx_int8"),
             "LiteRT int8, old defaults (plain)": ("old", "tflite_int8")}


def bench_model(m: Model, work: Path, rounds: int) -> dict[str, Any]:
    arts = convert(m, work)
    made = {"default": arts, "old": convert(m, work, "old")}
    forms = quantize_forms(m, arts["onnx_fp32"], work)
    sessions = {"fp32 (onnxruntime)": ort_session(arts["onnx_fp32"], {})}
    for label, path in forms.items():
        sessions[label] = ort_session(path, FORMS[label][4])
    for label, (how, key) in CONVERTED.items():
        if key.startswith("onnx"):
            sessions[label] = ort_session(made[how][key], {})
    variants = {k: ort_runner(s) for k, s in sessions.items()}
    variants["LiteRT int8"] = litert_runner(arts["tflite_int8"])  # the defaults' (LiteRT has one form)
    variants["LiteRT int8, old defaults (plain)"] = litert_runner(made["old"]["tflite_int8"])
    ref = outputs(variants["fp32 (onnxruntime)"], m.x_val)
    judged = {k: fidelity(outputs(run, m.x_val), ref) for k, run in variants.items()}
    runs = 20 if m.name.startswith("mobilenet") else 200
    log(f"{m.name}: timing {len(variants)} variants, {rounds} rounds x {runs} runs")
    timed = timings(variants, m.x_val[:1], rounds, runs)
    prof = {label: profile(forms[label], FORMS[label][4], m.x_val[:1], work / m.name / "profile" / str(i))
            for i, label in enumerate(PROFILED)}
    sizes = {k: p.stat().st_size for k, p in forms.items()}
    sizes.update({label: made[how][key].stat().st_size for label, (how, key) in CONVERTED.items()})
    converted = {how: {k: a[k] for k in ("seconds", "chosen", "trials")} for how, a in made.items()}
    return {"source": m.src.name, "judged_on": len(m.x_val), "calibrated_on": len(m.x_calib),
            "fidelity": judged, "latency": timed, "size_bytes": sizes, "profile": prof, "converted": converted,
            "defaults_vs_old": {fmt: round(timed[old]["p50_ms"] / timed[new]["p50_ms"], 3) for fmt, new, old in (
                ("onnx", "ONNX int8, defaults (auto, --for host)", "ONNX int8, old defaults (plain, S8S8 7-bit)"),
                ("tflite", "LiteRT int8", "LiteRT int8, old defaults (plain)"))}}


def table(results: dict[str, Any]) -> str:
    lines = ["| model | variant | p50 ms (p10-p90) | vs fp32 | vs LiteRT int8 | top-1 agreement | cosine |",
             "|---|---|---|---|---|---|---|"]
    for model, row in results["models"].items():
        lat = row["latency"]
        fp32, lite = lat["fp32 (onnxruntime)"]["p50_ms"], lat["LiteRT int8"]["p50_ms"]
        for name, t in lat.items():
            lines.append(f"| {model} | {name} | {t['p50_ms']:.3f} ({t['p10_ms']:.3f}-{t['p90_ms']:.3f}) | "
                         f"{fp32 / t['p50_ms']:.2f}x | {t['p50_ms'] / lite:.2f}x | "
                         f"{100 * row['fidelity'][name]['top1_agreement']:.1f}% | "
                         f"{row['fidelity'][name]['cosine']:.5f} |")
    return "\n".join(lines)


def profile_table(results: dict[str, Any]) -> str:
    lines = ["| model | form | graph after onnxruntime's fusion | ms per run by op type (top 5) |", "|---|---|---|---|"]
    for model, row in results["models"].items():
        for label, p in row["profile"].items():
            ops = ", ".join(f"{k} {v}" for k, v in list(p["graph_ops"].items())[:6])
            top = ", ".join(f"{k} {v:.3f}" for k, v in list(p["ms_per_run_by_op"].items())[:5])
            lines.append(f"| {model} | {label} | {ops} | {top} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "edgekit-int8-forms")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "int8_forms.json")
    ap.add_argument("--models", default="cnn,mobilenetv2")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    import onnxruntime

    from edgekit.measure.devices import cpu_model

    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(), "machine": platform.machine(),
                               "cores": os.cpu_count(), "onnxruntime": onnxruntime.__version__, "threads": 1,
                               "models": {}}
    for key in args.models.split(","):
        m = MODELS[key](args.work)
        results["models"][m.name] = bench_model(m, args.work, args.rounds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    print()
    for model, row in results["models"].items():
        print(f"{model}: old defaults' p50 / the defaults' (> 1: the defaults run faster): {row['defaults_vs_old']}; "
              f"converted: {json.dumps(row['converted'])}")
    print()
    print(profile_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
