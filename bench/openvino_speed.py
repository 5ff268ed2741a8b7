"""OpenVINO beside LiteRT and onnxruntime on one MobileNetV2 at 224x224, interleaved, threads 1 and all (issue 30).

The model: keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)) with seed 0 (random weights:
this is about speed), converted by edgekit (`--target onnx,tflite,openvino --quantize fp32,int8`, calibrated on
crops of scikit-image's sample photos, as bench/matrix.py does). Where the openvino target is absent, the IRs are
made from edgekit's ONNX artifacts by `openvino.convert_model` (said so in the JSON).

Rows, each loaded once per thread count through edgekit's runtimes (`open_runtime(...).bind(inputs)`: the call
`edgekit profile` times): OpenVINO int8 (IR, and edgekit's QDQ ONNX read by OpenVINO), LiteRT int8, onnxruntime
int8, the fp32 rows, and a bare OpenVINO loop (`compile_model` + `infer_request.infer` with the same properties)
on the int8 IR. Every round times a block of each row, in an order rotated per round, so drift and other load
hit all rows alike; p50 is over every timed run of the row, `vs_bare` the median of per-round block-p50 ratios.

Then onnxruntime's int8 at more threads, explained: the same QDQ ONNX in onnxruntime sessions built here with its
thread settings varied (intra-op threads, spinning on/off, dynamic block base), and its per-op profile at 1 and
2 threads (which ops get slower). Writes bench/results/openvino.json (or --out).

--defaults-vs-old (issue 40) instead converts the model twice, with today's defaults (`--int8-recipe auto`,
`--for host`) and with the old int8 flags (`--int8-recipe plain --for arm64`: signed activations, no search; FORMS),
records what each conversion made of its int8 artifacts (form, recipe kept, the conversion's own validation), and
times each int8 row of both beside the fp32 rows in one interleaved run at 1 thread, all cores and the runtimes'
defaults: the old form's time over the defaults' is the gain. Then onnxruntime's optimized graph and per-op profile
of each ONNX int8 file at 1 thread (what fused). `--model torch` takes bench/ncnn_compare.py's
MobileNetV2 (BatchNorm statistics from photos), whose int8 outputs fidelity can be judged on; `--model digits_yolo`
the bundled digits detector (validation judges its boxes).

Usage (from the repository root, after `pip install -e '.[all]'`; PATH must hold the venv's bin for onnx2tf):
    python bench/openvino_speed.py [--rounds 12] [--runs 25] [--work /tmp/edgekit-openvino] [--reuse]
    python bench/openvino_speed.py --defaults-vs-old [--model keras|torch|digits_yolo] [--reuse] \
        --out bench/results/openvino_defaults.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]  # this file is not bench/openvino.py: run as a script, its folder
# is first on sys.path, and a module named openvino there would hide the openvino package


def log(msg: str) -> None:
    print(f"> {msg}", file=sys.stderr, flush=True)


# --- the artifacts -----------------------------------------------------------------------------------------
# how the int8 artifacts are asked for: today's defaults, and the old form by flags (issue 40). No row of the --for
# table gives the S8S8 form with 7-bit weights edgekit made before `--for`; `--for arm64` gives S8S8 with 8-bit
# weights: the same signed activations (what made the old ONNX int8 slow on x86: docs/results/int8-forms.md measured
# the two weight widths at the same speed) and the recipe search off.
FORMS: dict[str, dict[str, str]] = {"defaults": {}, "old": {"int8_recipe": "plain", "deploy_cpu": "arm64"}}
FORM_FLAGS = {"defaults": "(none: --int8-recipe auto, --for host)", "old": "--int8-recipe plain --for arm64"}


def conv_dir(work: Path, form: str = "defaults", model: str = "keras") -> Path:
    """Where MODEL converted with FORM's flags lives: WORK/conv (the keras model, the defaults), WORK/conv-FORM; the
    torch model's under WORK/torch."""
    return (work if model == "keras" else work / model) / ("conv" if form == "defaults" else f"conv-{form}")


def artifacts(work: Path, reuse: bool, form: str = "defaults", model: str = "keras") -> tuple[dict[str, Path], str]:
    """{"onnx fp32", "onnx int8", "tflite fp32", "tflite int8", "openvino fp32", "openvino int8"} -> file, and
    how the IRs were made; MODEL (MODELS) converted with FORM's flags (FORMS) into conv_dir."""
    from edgekit.core.artifact import Manifest

    out = conv_dir(work, form, model)
    if not (reuse and (out / "manifest.json").is_file()):
        convert(work, out, FORMS[form], model)
    manifest = Manifest.read(out / "manifest.json")
    files = {f"{a.format} {a.precision}": manifest.resolve(a, out / "manifest.json") for a in manifest.artifacts
             if a.ok and a.format in ("onnx", "tflite", "openvino") and a.precision in ("fp32", "int8")}
    how = "edgekit convert --target openvino"
    if "openvino int8" not in files:
        how = "openvino.convert_model on edgekit's ONNX artifacts (no openvino target here)"
        for precision in ("fp32", "int8"):
            files[f"openvino {precision}"] = ir_from_onnx(files[f"onnx {precision}"],
                                                          out / f"ir.{precision}.xml")
    return files, how


def conversion_record(out: Path) -> dict[str, Any]:
    """What the conversion in OUT made of each int8 artifact: the ONNX form, the recipe auto kept with its trials,
    and the conversion's own validation (the fidelity figures, passed or not); and its seconds."""
    from edgekit.core.filedoc import read_json

    m = read_json(out / "manifest.json", what="manifest")
    form = (m.get("options") or {}).get("deploy_cpu_form") or {}
    rec: dict[str, Any] = {"options": {k: (m.get("options") or {}).get(k) for k in ("int8_recipe", "int8_budget",
                                                                                    "deploy_cpu")},
                           "onnx_form": (form.get("onnx") or {}).get("form"), "cpu": form.get("cpu"),
                           "seconds": (m.get("run") or {}).get("seconds"), "artifacts": {}}
    for a in m.get("artifacts", []):
        if a.get("precision") != "int8":
            continue
        fid, recipe = a.get("fidelity") or {}, (a.get("extra") or {}).get("int8_recipe") or {}
        rec["artifacts"][a["format"]] = {
            "status": a.get("status"), "chosen": recipe.get("chosen"), "met": recipe.get("met"),
            "budget": recipe.get("budget"),
            "trials": [(t.get("recipe"), t.get("seconds")) for t in recipe.get("trials", [])],
            "activations": (recipe.get("config") or {}).get("activations"),
            "reduce_range": (recipe.get("config") or {}).get("reduce_range"),
            **{k: fid.get(k) for k in ("passed", "top1_agreement", "cosine", "max_abs_error", "samples",
                                       "failures")}}
    return rec


# the models: "keras", the page's keras.applications MobileNetV2 with Keras's random initialisation (its softmax is
# near uniform, so its int8 outputs carry no fidelity figure: speed only); "torch", bench/ncnn_compare.py's plain-torch
# MobileNetV2 at 224 with its BatchNorm statistics from photo crops (bench/int8_forms.py's: outputs that int8 can be
# judged by); "digits_yolo", the bundled trained digits detector (models/digits_yolo.onnx, docs/results/detectors.md),
# calibrated and validated on the bundled canvases (models/digits_detect_val.npz: validation judges its boxes)
MODELS = ("keras", "torch", "digits_yolo")


def convert(work: Path, out: Path, flags: dict[str, str] | None = None, model: str = "keras") -> None:
    from matrix import calibration_photos

    from edgekit.conversion.pipeline import convert as edgekit_convert
    from edgekit.targets import TARGETS

    targets = "onnx,tflite" + (",openvino" if "openvino" in TARGETS else "")
    if model == "digits_yolo":
        log(f"converting the digits detector: {targets} x fp32,int8 {flags or ''}")
        edgekit_convert(REPO / "models" / "digits_yolo.onnx", targets, "fp32,int8",
                        calib=str(REPO / "models" / "digits_detect_val.npz"), out=out, force=True, progress=log,
                        **(flags or {}))
        return
    if model == "torch":
        from ncnn_compare import build_mobilenet

        src, photos = build_mobilenet(work / "torch")
        log(f"converting the plain-torch MobileNetV2: {targets} x fp32,int8 {flags or ''} (minutes)")
        edgekit_convert(src, targets, "fp32,int8", calib=str(photos), out=out, force=True, progress=log,
                        **(flags or {}))
        return
    import keras

    src = work / "mobilenetv2_224.keras"
    if not src.is_file():
        log("building keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3))")
        keras.utils.set_random_seed(0)
        keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)).save(src)
    calib = calibration_photos(work / "calib")
    log(f"converting MobileNetV2: {targets} x fp32,int8 {flags or ''} (minutes)")
    edgekit_convert(src, targets, "fp32,int8", calib=str(calib), calib_size=32, val_size=16, out=out, force=True,
                    mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5], progress=log, **(flags or {}))


def ir_from_onnx(onnx: Path, xml: Path) -> Path:
    from edgekit.core.vendor_telemetry import require_quiet

    ov = require_quiet("openvino")
    ov.save_model(ov.convert_model(str(onnx)), str(xml))
    return xml


# --- the rows ------------------------------------------------------------------------------------------------
ROWS = [  # label, runtime, artifact key; int8 rows first
    ("OpenVINO int8 (IR)", "openvino", "openvino int8"),
    ("OpenVINO int8 (edgekit's QDQ ONNX)", "openvino", "onnx int8"),
    ("LiteRT int8", "litert", "tflite int8"),
    ("onnxruntime int8", "onnxruntime", "onnx int8"),
    ("OpenVINO fp32 (IR)", "openvino", "openvino fp32"),
    ("LiteRT fp32", "litert", "tflite fp32"),
    ("onnxruntime fp32", "onnxruntime", "onnx fp32"),
]
BARE = "bare OpenVINO loop, int8 IR"


def edgekit_call(runtime: str, path: Path, threads: int | None) -> tuple[Callable[[], Any], Any, np.ndarray]:
    """(the bound call `edgekit profile` times, the runtime, the input it was fed: one random image in [0, 1), NCHW
    or NHWC as the artifact takes it, in its dtype)."""
    from edgekit.runtimes import open_runtime
    from edgekit.runtimes.base import quantize

    rt = open_runtime(path, runtime=runtime, device="cpu", threads=threads)
    spec = rt.inputs[0]
    dims = [d if isinstance(d, int) and d > 0 else 1 for d in spec.shape]  # a dynamic batch: 1
    if dims[1:] in ([3, 224, 224], [224, 224, 3]):  # the MobileNetV2s: the same image in either layout
        x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
        x = x if spec.shape[1] == 3 else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    else:
        x = np.random.default_rng(0).random(dims, dtype=np.float32)
    feed = quantize(x, spec)
    return rt.bind({spec.name: feed}), rt, feed


def bare_openvino(xml: Path, threads: int | None, x: np.ndarray) -> Callable[[], Any]:
    """The tightest loop an OpenVINO user writes, with the properties edgekit compiles with."""
    import openvino as ov

    config = {"PERFORMANCE_HINT": "LATENCY", "PERFORMANCE_HINT_NUM_REQUESTS": 1, "INFERENCE_PRECISION_HINT": "f32"}
    if threads:
        config["INFERENCE_NUM_THREADS"] = threads
    compiled = ov.Core().compile_model(str(xml), "CPU", config)
    request = compiled.create_infer_request()
    return lambda: request.infer({0: x})


def bare_block(call: Callable[[], Any], runs: int) -> list[int]:
    pc = time.perf_counter_ns
    times = [0] * runs
    for i in range(runs):
        t0 = pc()
        call()
        times[i] = pc() - t0
    return times


def interleaved(calls: dict[str, tuple[Callable[[], Any], bool]], rounds: int, runs: int,
                warmup: int) -> dict[str, list[list[int]]]:
    """label -> the per-run ns of each round's block; (call, bare) per label; order rotated every round."""
    from edgekit.measure.loop import timed_loop

    labels = list(calls)
    for call, _ in calls.values():
        for _ in range(warmup):
            call()
    blocks: dict[str, list[list[int]]] = {k: [] for k in labels}
    for r in range(rounds):
        for label in labels[r % len(labels):] + labels[:r % len(labels)]:
            call, bare = calls[label]
            blocks[label].append(bare_block(call, runs) if bare else timed_loop([call], runs, 0.0)[0])
    return blocks


def figures(blocks: list[list[int]]) -> dict[str, Any]:
    allruns = np.concatenate([np.asarray(b, dtype=np.float64) for b in blocks]) / 1e6
    block_p50 = [round(float(np.percentile(np.asarray(b) / 1e6, 50)), 4) for b in blocks]
    return {"p50_ms": float(np.percentile(allruns, 50)), "p90_ms": float(np.percentile(allruns, 90)),
            "mean_ms": float(allruns.mean()), "runs": int(allruns.size),
            "best_block_p50_ms": min(block_p50),  # the least disturbed block: the figure of a quiet machine
            "block_p50_ms": block_p50}


def paired(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def measure(files: dict[str, Path], threads: int | None, rounds: int, runs: int) -> dict[str, Any]:
    calls: dict[str, tuple[Callable[[], Any], bool]] = {}
    held: list[Any] = []
    feeds = {}
    for label, runtime, key in ROWS:
        call, rt, feeds[label] = edgekit_call(runtime, files[key], threads)
        calls[label] = (call, False)
        held.append(rt)
    x = feeds["OpenVINO int8 (IR)"]
    calls[BARE] = (bare_openvino(files["openvino int8"], threads, x), True)
    np.testing.assert_array_equal(calls[BARE][0]()[0], calls["OpenVINO int8 (IR)"][0]()[0])  # the same work
    log(f"threads {threads or 'default'}: {rounds} rounds x {len(calls)} rows x {runs} runs")
    blocks = interleaved(calls, rounds, runs, warmup=10)
    rows = {label: figures(b) for label, b in blocks.items()}
    ov8 = rows["OpenVINO int8 (IR)"]
    best_label = min(("LiteRT int8", "onnxruntime int8"), key=lambda k: rows[k]["p50_ms"])
    summary = {
        "openvino_int8_vs_best_other_int8": ov8["p50_ms"] / rows[best_label]["p50_ms"],
        "openvino_int8_vs_best_other_int8_best_blocks": ov8["best_block_p50_ms"] / min(
            rows[k]["best_block_p50_ms"] for k in ("LiteRT int8", "onnxruntime int8")),
        "best_other_int8": best_label,
        "openvino_int8_vs_bare_loop_in_this_run": paired(ov8["block_p50_ms"], rows[BARE]["block_p50_ms"]),
        "openvino_int8_vs_onnxruntime_int8": ov8["p50_ms"] / rows["onnxruntime int8"]["p50_ms"],
        "kernel_precisions": {label: rt.info().get("kernel_precisions") for (label, name, _), rt
                              in zip(ROWS, held, strict=True) if name == "openvino"},
    }
    for rt in held:
        rt.close()
    held.clear()
    calls.clear()
    summary["edgekit_vs_bare_loop"] = overhead(files["openvino int8"], threads, rounds * 2, runs)
    return {"rows": rows, "summary": summary}


def overhead(xml: Path, threads: int | None, rounds: int, runs: int) -> dict[str, Any]:
    """edgekit's openvino runtime against the bare loop on the int8 IR, the two alone in the process (one model per
    process, as `edgekit profile` and each `edgekit bench` row run): the median of paired block-p50 ratios."""
    call, rt, x = edgekit_call("openvino", xml, threads)
    blocks = interleaved({"edgekit": (call, False), "bare": (bare_openvino(xml, threads, x), True)}, rounds, runs, 10)
    rt.close()
    e, b = figures(blocks["edgekit"]), figures(blocks["bare"])
    return {"ratio": paired(e["block_p50_ms"], b["block_p50_ms"]), "edgekit_p50_ms": e["p50_ms"],
            "bare_p50_ms": b["p50_ms"], "edgekit_best_block_p50_ms": e["best_block_p50_ms"],
            "bare_best_block_p50_ms": b["best_block_p50_ms"]}


# --- onnxruntime's int8 with more threads ----------------------------------------------------------------------
ORT_VARIANTS = {  # label -> (intra-op threads, session config entries)
    "1 thread": (1, {}),
    "2 threads, spinning (onnxruntime's default)": (2, {"session.intra_op.allow_spinning": "1"}),
    "2 threads, no spinning (edgekit's default)": (2, {"session.intra_op.allow_spinning": "0"}),
    "2 threads, spinning, dynamic_block_base 4": (2, {"session.intra_op.allow_spinning": "1",
                                                      "session.dynamic_block_base": "4"}),
}


def ort_session(path: Path, threads: int, config: dict[str, str], profile: str | None = None) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    if profile:
        so.enable_profiling, so.profile_file_prefix = True, profile
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


def ort_threads(files: dict[str, Path], rounds: int, runs: int, work: Path) -> dict[str, Any]:
    calls: dict[str, tuple[Callable[[], Any], bool]] = {}
    for precision in ("int8", "fp32"):
        for label, (threads, config) in ORT_VARIANTS.items():
            sess = ort_session(files[f"onnx {precision}"], threads, config)
            name = sess.get_inputs()[0].name
            x = _image(sess.get_inputs()[0].shape)
            calls[f"{precision}: {label}"] = (lambda s=sess, f={name: x}: s.run(None, f), True)
    log(f"onnxruntime thread variants: {rounds} rounds x {len(calls)} x {runs} runs")
    rows = {k: figures(b) for k, b in interleaved(calls, rounds, runs, warmup=10).items()}
    return {"rows": rows, "ops_ms": {t: ort_op_profile(files["onnx int8"], t, work) for t in (1, 2)}}


def _image(shape: list[Any]) -> np.ndarray:
    """One random image in [0, 1) for an input of SHAPE (NCHW or NHWC, batch dynamic)."""
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    return x if shape[1] == 3 else np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def ort_op_profile(path: Path, threads: int, work: Path, runs: int = 60) -> dict[str, float]:
    """Mean ms per inference spent in each op type (onnxruntime's own profiler), at THREADS spinning threads."""
    sess = ort_session(path, threads, {"session.intra_op.allow_spinning": "1"}, profile=str(work / f"ort_{threads}"))
    name = sess.get_inputs()[0].name
    x = _image(sess.get_inputs()[0].shape)
    for _ in range(runs):
        sess.run(None, {name: x})
    events = json.loads(Path(sess.end_profiling()).read_text())
    per_op: dict[str, float] = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            op = e.get("args", {}).get("op_name", "?")
            per_op[op] = per_op.get(op, 0.0) + e["dur"] / 1e3 / runs
    return dict(sorted(((k, round(v, 4)) for k, v in per_op.items()), key=lambda kv: -kv[1]))


# --- the defaults against the old form, in one run (issue 40) ------------------------------------------------
# label -> (runtime, form, artifact key); the fp32 rows are the defaults' conversion's (no int8 flag touches them)
SIDE_BY_SIDE = [
    ("onnxruntime int8", "onnxruntime", "onnx int8"),
    ("OpenVINO int8 (edgekit's QDQ ONNX)", "openvino", "onnx int8"),
    ("LiteRT int8", "litert", "tflite int8"),
    ("OpenVINO int8 (IR, NNCF)", "openvino", "openvino int8"),
]
FP32_ROWS = [("onnxruntime fp32", "onnxruntime", "onnx fp32"), ("LiteRT fp32", "litert", "tflite fp32"),
             ("OpenVINO fp32 (IR)", "openvino", "openvino fp32")]


def defaults_vs_old(files: dict[str, dict[str, Path]], threads: int | None, rounds: int, runs: int
                    ) -> dict[str, Any]:
    """Each int8 row of SIDE_BY_SIDE made with the defaults and with the old flags, and the fp32 rows, each loaded
    once through edgekit's runtimes and timed interleaved (order rotated per round). Per row: p50 over every run and
    the best block; per int8 row, the old form's time over the defaults' (> 1: the defaults run faster) by p50, by
    best block, and the median of the rounds' paired block ratios."""
    calls: dict[str, tuple[Callable[[], Any], bool]] = {}
    held: list[Any] = []
    rows_asked = [(f"{label}, {form}", runtime, files[form][key]) for label, runtime, key in SIDE_BY_SIDE
                  for form in ("defaults", "old")]
    rows_asked += [(label, runtime, files["defaults"][key]) for label, runtime, key in FP32_ROWS]
    for label, runtime, path in rows_asked:
        call, rt, _ = edgekit_call(runtime, path, threads)
        calls[label] = (call, False)
        held.append(rt)
    log(f"defaults against old, threads {threads or 'default'}: {rounds} rounds x {len(calls)} rows x {runs} runs")
    rows = {label: figures(b) for label, b in interleaved(calls, rounds, runs, warmup=10).items()}
    for rt in held:
        rt.close()
    ratios = {}
    for label, _, _ in SIDE_BY_SIDE:
        new, old = rows[f"{label}, defaults"], rows[f"{label}, old"]
        ratios[label] = {"p50": round(old["p50_ms"] / new["p50_ms"], 3),
                         "best_block": round(old["best_block_p50_ms"] / new["best_block_p50_ms"], 3),
                         "paired_blocks": round(paired(old["block_p50_ms"], new["block_p50_ms"]), 3)}
    return {"rows": rows, "old_over_defaults": ratios}


def onnx_int8_graph(path: Path, folder: Path, runs: int = 100) -> dict[str, Any]:
    """What onnxruntime makes of an int8 QDQ file at 1 thread: its optimized graph's op types (which QDQ groups fused
    into QLinear kernels, which stayed Q/DQ around float ops) and its profiler's ms per run by op type (profiled
    runs are slower than timed ones: read the shares)."""
    from collections import Counter

    import onnx
    import onnxruntime as ort

    folder.mkdir(parents=True, exist_ok=True)
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.enable_profiling, so.profile_file_prefix = True, str(folder / "ort")
    so.optimized_model_filepath = str(folder / "optimized.onnx")
    sess = ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])
    spec = sess.get_inputs()[0]
    x = np.random.default_rng(0).random([d if isinstance(d, int) and d > 0 else 1 for d in spec.shape],
                                        dtype=np.float32)
    for _ in range(runs):
        sess.run(None, {spec.name: x})
    per_op: dict[str, float] = {}
    for e in json.loads(Path(sess.end_profiling()).read_text()):
        if e.get("cat") == "Node" and str(e.get("name", "")).endswith("_kernel_time"):
            op = e.get("args", {}).get("op_name", "?")
            per_op[op] = per_op.get(op, 0.0) + e["dur"] / 1e3 / runs
    ops = Counter(n.op_type for n in onnx.load(str(folder / "optimized.onnx"), load_external_data=False).graph.node)
    return {"graph_ops": dict(ops.most_common()), "kernel_ms_per_run": round(sum(per_op.values()), 3),
            "ms_per_run_by_op": dict(sorted(((k, round(v, 3)) for k, v in per_op.items()), key=lambda kv: -kv[1]))}


def show_defaults_vs_old(threads: str, result: dict[str, Any]) -> None:
    rows = result["rows"]
    print(f"\n## defaults against old, threads {threads}\n\n| row | p50 ms (best block) |\n|---|---|")
    for label, r in rows.items():
        print(f"| {label} | {r['p50_ms']:.2f} ({r['best_block_p50_ms']:.2f}) |")
    print("\nold / defaults (> 1: the defaults run faster): " + "; ".join(
        f"{k} {v['p50']:.2f}x (best blocks {v['best_block']:.2f}x, paired {v['paired_blocks']:.2f}x)"
        for k, v in result["old_over_defaults"].items()))


# --- report ------------------------------------------------------------------------------------------------------
# --- int8 activations: signed (edgekit's ONNX int8 today) or unsigned --------------------------------------------
def activation_types(files: dict[str, Path], rounds: int, runs: int, work: Path) -> dict[str, Any]:
    """The fp32 ONNX quantized by onnxruntime (QDQ, per-channel int8 weights) with int8 and with uint8 activations,
    each run by onnxruntime and by OpenVINO at 1 thread. Calibrated on random images: this is about speed only."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = work / "act_pre.onnx"
    quant_pre_process(str(files["onnx fp32"]), str(pre), skip_symbolic_shape=True)
    name = onnx.load(str(pre)).graph.input[0].name
    shape = [d.dim_value or 1 for d in onnx.load(str(pre)).graph.input[0].type.tensor_type.shape.dim]

    class Images(CalibrationDataReader):
        def __init__(self) -> None:
            self.left = iter([{name: _image(shape[:1] + shape[1:])} for _ in range(8)])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.left, None)

    calls: dict[str, tuple[Callable[[], Any], bool]] = {}
    held = []
    for act, tag in ((QuantType.QInt8, "int8"), (QuantType.QUInt8, "uint8")):
        path = work / f"act_{tag}.onnx"
        quantize_static(str(pre), str(path), Images(), quant_format=QuantFormat.QDQ, activation_type=act,
                        weight_type=QuantType.QInt8, per_channel=True)
        for runtime in ("onnxruntime", "openvino"):
            call, rt, _ = edgekit_call(runtime, path, 1)
            calls[f"{runtime}, {tag} activations"] = (call, False)
            held.append(rt)
    log(f"int8 activations: {rounds} rounds x {len(calls)} x {runs} runs")
    rows = {k: figures(b) for k, b in interleaved(calls, rounds, runs, warmup=10).items()}
    for rt in held:
        rt.close()
    return rows


def machine() -> dict[str, Any]:
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and not flags:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = line
                break
    from edgekit.core._deps import version_of

    return {"cpu": model, "cores": os.cpu_count(), "machine": platform.machine(),
            "isa": [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "avx512_bf16")
                    if f" {f}" in flags],
            "versions": {d: version_of(d) for d in ("openvino", "onnxruntime", "ai-edge-litert", "nncf")},
            "loadavg_start": os.getloadavg()}


def show(threads: str, result: dict[str, Any]) -> None:
    rows, s = result["rows"], result["summary"]
    print(f"\n## threads {threads}\n\n| row | p50 ms | p90 ms |\n|---|---:|---:|")
    for label, r in rows.items():
        print(f"| {label} | {r['p50_ms']:.2f} | {r['p90_ms']:.2f} |")
    o = s["edgekit_vs_bare_loop"]
    print(f"\nOpenVINO int8 / best other int8 ({s['best_other_int8']}): {s['openvino_int8_vs_best_other_int8']:.3f} "
          f"(best blocks: {s['openvino_int8_vs_best_other_int8_best_blocks']:.3f}); / onnxruntime int8: "
          f"{s['openvino_int8_vs_onnxruntime_int8']:.3f}; edgekit / bare loop, alone: {o['ratio']:.3f} "
          f"({o['edgekit_p50_ms']:.2f} / {o['bare_p50_ms']:.2f} ms); kernels: {s['kernel_precisions']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/edgekit-openvino-bench"))
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "openvino.json")
    ap.add_argument("--reuse", action="store_true", help="reuse the conversion already in --work")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--runs", type=int, default=25, help="timed runs per row per round")
    ap.add_argument("--skip-ort-threads", action="store_true")
    ap.add_argument("--model", choices=MODELS, default="keras", help="with --defaults-vs-old: which model (MODELS)")
    ap.add_argument("--defaults-vs-old", action="store_true",
                    help="convert also with the old int8 flags (FORM_FLAGS) and time only the int8 rows of both "
                         "beside the fp32 rows, at 1 thread, all cores and the runtimes' defaults (issue 40)")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.defaults_vs_old:
        return main_defaults_vs_old(args)

    files, how = artifacts(args.work, args.reuse)
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": machine(), "irs_made_by": how,
                              "settings": {"rounds": args.rounds, "runs_per_block": args.runs, "batch": 1},
                              "files": {k: str(v) for k, v in files.items()}, "threads": {}}
    # 1, all cores, and each runtime's own default (no thread count given: what `edgekit bench` measures)
    for threads in [*sorted({1, os.cpu_count() or 1}), None]:
        key = str(threads or "default")
        result["threads"][key] = measure(files, threads, args.rounds, args.runs)
        show(key, result["threads"][key])
    if not args.skip_ort_threads:
        result["onnxruntime_threads"] = ort_threads(files, args.rounds, args.runs, args.work)
        print("\n## onnxruntime thread settings\n\n| variant | p50 ms | p90 ms |\n|---|---:|---:|")
        for label, r in result["onnxruntime_threads"]["rows"].items():
            print(f"| {label} | {r['p50_ms']:.2f} | {r['p90_ms']:.2f} |")
        ops = result["onnxruntime_threads"]["ops_ms"]
        print("\nint8 ms per inference by op type, 1 -> 2 threads: " + ", ".join(
            f"{op} {ops[1][op]:.2f} -> {ops[2].get(op, 0):.2f}" for op in list(ops[1])[:6]))
        result["activation_types"] = activation_types(files, args.rounds, args.runs, args.work)
        print("\n## int8 activations (1 thread)\n\n| variant | p50 ms | best block p50 ms |\n|---|---:|---:|")
        for label, r in result["activation_types"].items():
            print(f"| {label} | {r['p50_ms']:.2f} | {r['best_block_p50_ms']:.2f} |")
    result["machine"]["loadavg_end"] = os.getloadavg()
    from edgekit.core.fsutil import atomic_write_json

    atomic_write_json(args.out, result)
    log(f"written: {args.out}")
    return 0


def main_defaults_vs_old(args: argparse.Namespace) -> int:
    """--defaults-vs-old: both conversions, their records, and the interleaved side-by-side at each thread setting."""
    result: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "machine": machine(), "form_flags": FORM_FLAGS,
                              "model": args.model,
                              "settings": {"rounds": args.rounds, "runs_per_block": args.runs, "batch": 1},
                              "conversions": {}, "threads": {}}
    files: dict[str, dict[str, Path]] = {}
    for form in FORMS:
        files[form], result[f"irs_made_by_{form}"] = artifacts(args.work, args.reuse, form, args.model)
        result["conversions"][form] = conversion_record(conv_dir(args.work, form, args.model))
        log(f"{form}: {json.dumps(result['conversions'][form])}")
    result["files"] = {form: {k: str(v) for k, v in f.items()} for form, f in files.items()}
    result["loadavg_before_timing"] = os.getloadavg()
    for threads in [*sorted({1, os.cpu_count() or 1}), None]:
        key = str(threads or "default")
        result["threads"][key] = defaults_vs_old(files, threads, args.rounds, args.runs)
        result["threads"][key]["loadavg_after"] = os.getloadavg()
        show_defaults_vs_old(key, result["threads"][key])
    result["onnx_int8_graph"] = {form: onnx_int8_graph(files[form]["onnx int8"], args.work / f"ort-{args.model}-{form}")
                                 for form in FORMS}  # after the timing: the profiler's runs are not timed ones
    for form, g in result["onnx_int8_graph"].items():
        print(f"\nonnxruntime's graph of the {form} ONNX int8 (1 thread): {g['graph_ops']}\nkernel ms per run "
              f"{g['kernel_ms_per_run']}: {g['ms_per_run_by_op']}")
    result["machine"]["loadavg_end"] = os.getloadavg()
    from edgekit.core.fsutil import atomic_write_json

    atomic_write_json(args.out, result)
    log(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
