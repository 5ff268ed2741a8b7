"""docs/zoo.md from the zoo's result JSONs: the classifier table (issue 8) and the non-classifiers (issue 15).

Why a module of its own: bench/zoo.py builds and runs the models; this turns what they left in
bench/results/zoo/<model>.json into the page, failures as failures. A model without a local JSON keeps the
row the page already has, marked as from its earlier run (bench/zoo_earlier.py), so a report written on
another machine, or after rerunning a few models, does not drop the results of the last full run.

    python bench/zoo.py report           # the whole page
    python bench/zoo.py report --tasks   # only the non-classifier section
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from zoo_earlier import KeptRow, earlier_rows, row_dates
from zoo_models import (
    CALIB_SIZE,
    CLASSIFIER_FLAGS,
    DOC,
    MAX_RSS,
    MAX_SECONDS,
    N_HEAD,
    PRECISIONS,
    RESULTS,
    ROOT,
    SIZE,
    TARGETS,
    TASKS,
    VAL_SIZE,
    ZOO,
    machine,
)
from zoo_timm import NEEDS

COLUMNS = ("onnx fp32", "onnx int8", "tflite fp32", "tflite int8", "edgetpu int8")
CLASSIFIER_DATE = r"^- Date: (\S+) to (\S+)"  # the line that dates a page's rows run there (see `report`)
TASK_DATE = r"^Run (\S+) to (\S+) on"


def _head() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def revision_words(done: list[dict[str, Any]]) -> str:
    """Which code the rows ran, from each row's `edgekit` record (commit, and whether edgekit/ differed from it)."""
    groups: dict[str, int] = {}
    for r in done:
        rev = r.get("edgekit") or {}
        if not rev.get("commit"):
            key = "an unrecorded commit (rows from before rows recorded it: each reflects the code at its date)"
        elif rev.get("edgekit_changed"):
            key = f"commit {rev['commit']} with local changes to edgekit/"
        else:
            key = f"commit {rev['commit']}, edgekit/ unchanged"
        groups[key] = groups.get(key, 0) + 1
    if len(groups) == 1:
        return f"every row ran at {next(iter(groups))}"
    return "rows ran at " + "; ".join(f"{k} ({n} row{'s' if n > 1 else ''})" for k, n in groups.items())


def load_results(results: Path = RESULTS) -> dict[str, dict[str, Any]]:
    """Every RESULTS/<model>.json, by model name."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(results.glob("*.json"))}


def _column(a: dict[str, Any]) -> str:
    if "edgetpu" in a.get("extra", {}) or "uint8io" in a["path"] or a["format"] == "edgetpu":
        return "edgetpu int8"
    return f"{a['format']} {a['precision']}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _cell(a: dict[str, Any] | None) -> str:
    if a is None:
        return "not made"
    if a.get("status") == "failed":
        f = a.get("failure") or {}
        return f"**FAILED** at {f.get('step') or '?'}" + (f" (`{f['op']}`)" if f.get("op") else "")
    fid = a.get("fidelity") or {}
    mark = "ok" if fid.get("passed") else "ok, **fidelity miss**"
    return f"{mark}: agree {_pct(fid.get('top1_agreement'))}, acc {_pct(fid.get('accuracy'))}"


def _size(n: float | None, unit: str = "B") -> str:
    if not n:
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.1f} {suffix}{unit}"
    return f"{n:.0f} {unit}"


def over_time(rec: dict[str, Any]) -> bool:
    return float((rec.get("convert") or {}).get("seconds") or 0) > MAX_SECONDS


def peak_rss(rec: dict[str, Any]) -> int:
    """The largest RSS seen for the convert child: its own (wait4), the sampled tree, the manifest's `run`."""
    run = (rec.get("manifest") or {}).get("run") or {}
    conv = rec.get("convert") or {}
    return max(conv.get("peak_rss_bytes") or 0, conv.get("peak_tree_rss_bytes") or 0, run.get("peak_rss_bytes") or 0,
               run.get("peak_rss_children_bytes") or 0)


def over_rss(rec: dict[str, Any]) -> bool:
    return peak_rss(rec) > MAX_RSS


def _bound(text: str, over: bool) -> str:
    return f"**{text}** (over)" if over else text


def _row(rec: dict[str, Any]) -> tuple[str, list[tuple[str, str, dict[str, Any]]]]:
    """A table row for REC and the failures to list under the table."""
    src = rec.get("source") or {}
    man = rec.get("manifest") or {}
    arts = {_column(a): a for a in man.get("artifacts", [])}
    ref = next((a["fidelity"].get("reference_accuracy") for a in arts.values() if a.get("fidelity")), None)
    tpu = (arts.get("edgetpu int8") or {}).get("extra", {}).get("edgetpu") or {}
    tpu_s = "-"
    if tpu.get("ops_total"):
        first = tpu.get("first_unsupported") or {}
        tpu_s = (f"{tpu['ops_on_tpu']}/{tpu['ops_total']} ops, {_size(tpu.get('macs_on_tpu'), '')}MAC "
                 f"({_pct(tpu.get('macs_on_tpu_fraction'))})" + (f", stops at `{first.get('op')}`" if first else ""))
    conv = rec.get("convert") or {}
    rss = peak_rss(rec)
    status = rec.get("status", "?")
    cells = [_cell(arts.get(c)) if man else f"**{status}**" for c in COLUMNS]
    origin = f"{rec['package']} `{rec['class']}`" + (f" ({rec['note']})" if rec.get("note") else "")
    row = [f"`{rec['name']}`", origin, _size(src.get("params"), ""), str(src.get("input", "-")), _pct(ref), *cells,
           tpu_s, _bound(f"{conv.get('seconds', '-')} s", over_time(rec)), _bound(_size(rss), over_rss(rec))]
    fails = [(c, a["failure"]) for c, a in arts.items() if a.get("status") == "failed"]
    if not man and status != "?":
        child = conv or rec.get("build") or {}
        tail = [ln for ln in child.get("log_tail", "").strip().splitlines() if ln.strip()]
        fails.append((f"{'convert' if conv else 'build'}: {status} after {child.get('seconds')} s",
                      {"message": f"last line of its log: {tail[-1] if tail else '(none)'}"}))
    return "| " + " | ".join(row) + " |", fails


def _clean(text: Any, limit: int) -> str:
    """One line of at most LIMIT characters, without terminal colours or this checkout's absolute path."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text or "")).replace(str(ROOT) + os.sep, "")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


_MEASURE = {"classes": ("top1_agreement", "top-1"), "dense": ("pixel_agreement", "px"),
            "sequence": ("step_agreement", "step"), "regression": ("cosine", "cos"),
            "detection": ("detection_recall", "recall")}


def _detection_words(fid: dict[str, Any]) -> str:
    """A detector output's figures: its boxes' recall and precision against the source's, and mAP50 against the
    labelled boxes where the .npz has them, the keypoints' move where the head has keypoints (MediaPipe's anchors
    heads); or, where the source found too few boxes to judge them by (the record's thresholds then hold no
    detection_recall), the raw output's cosine, which the verdict then rests on, after the box figures recorded."""
    boxes = fid.get("detections")
    text = f"recall {_pct1(fid.get('detection_recall'))}, precision {_pct1(fid.get('detection_precision'))}"
    if fid.get("keypoint_error_px") is not None:
        text += f", keypoints {_px(fid['keypoint_error_px'], fid.get('keypoint_error_share'))}"
    if "detection_recall" not in (fid.get("thresholds") or {"detection_recall": None}):
        cos = fid.get("cosine")
        shown = f" ({text})" if fid.get("detection_recall") is not None else ""
        return (f"{'-' if boxes is None else boxes} source boxes, too few{shown}: raw output cos "
                f"{'-' if cos is None else f'{cos:.4f}'}")
    if fid.get("map50") is not None:
        ref = fid.get("reference_map50")
        text += f", mAP50 {fid['map50']:.3f}" + (f" (source {ref:.3f})" if ref is not None else "")
    return text + (f" of {boxes} boxes" if boxes is not None else "")


def _px(px: float, share: float | None) -> str:
    return f"{px:.2f} px" + (f" ({100 * share:.2f}%)" if share is not None else "")


def _kind_words(fid: dict[str, Any]) -> str:
    """The figures of one output judged as a mask, landmarks or a score (issue 37's kinds)."""
    kind = (fid.get("kind") or "").partition(":")[0]
    if kind == "mask":
        iou = fid.get("mask_iou")
        return (f"mask: agreement {_pct1(fid.get('mask_agreement'))}, IoU {'-' if iou is None else f'{iou:.3f}'}, "
                f"regions kept {_pct1(fid.get('region_recall'))}"
                + (f" of {fid['regions']}" if fid.get("regions") is not None else ""))
    if kind == "landmarks":
        mean = "-" if fid.get("landmark_error_px") is None else _px(fid["landmark_error_px"],
                                                                     fid.get("landmark_error_share"))
        p95 = "-" if fid.get("landmark_p95_px") is None else _px(fid["landmark_p95_px"], fid.get("landmark_p95_share"))
        return f"landmarks: {mean} mean, p95 {p95}"
    change = fid.get("score_change")
    return (f"score: decisions {_pct1(fid.get('score_agreement'))} the same, change "
            f"{'-' if change is None else f'{change:.3f}'}")


def _pct1(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _task_cell(a: dict[str, Any] | None) -> str:
    """A task artifact: its worst output, judged as its kind (per-pixel, per-step, cosine, boxes), and mIoU if
    measured."""
    if a is None or a.get("status") == "failed":
        return _cell(a)
    fid = a.get("fidelity") or {}
    outs = fid.get("outputs") or []
    if any(o.get("kind") in _KINDS_37 for o in outs):  # each output's own figure: a px error, a score, a mask
        mark = "ok" if fid.get("passed") else "ok, **fidelity miss**"
        return f"{mark}: " + "; ".join(_output_words(o) for o in outs
                                       if not (o.get("kind_reason") or "").startswith("judged with"))
    key, word = _MEASURE.get(fid.get("kind") or "regression", ("cosine", "cos"))
    v = fid.get(key)
    value = "-" if v is None else f"{v:.4f}" if key == "cosine" else f"{100 * v:.1f}%"
    if key == "detection_recall":
        word, value = "boxes:", _detection_words(fid)
    n = len([o for o in fid.get("outputs") or [] if not (o.get("kind_reason") or "").startswith("judged with")]) or 1
    miou = f", mIoU {fid['miou']:.3f}" if fid.get("miou") is not None else ""
    mark = "ok" if fid.get("passed") else "ok, **fidelity miss**"
    return f"{mark}: `{fid.get('output') or '?'}` {word} {value}{miou}" + (f" (worst of {n})" if n > 1 else "")


_KINDS_37 = ("mask", "landmarks", "score")


def _output_words(o: dict[str, Any]) -> str:
    """One output of an artifact judged output by output: its name, its kind's figures, MISS where it failed."""
    f = {**(o.get("fidelity") or {}), "kind": o.get("kind")}
    kind = f["kind"] or "regression"
    if kind in _KINDS_37:
        words = _kind_words(f)
    elif kind == "detection":
        words = "boxes: " + _detection_words(f)
    else:
        key, word = _MEASURE.get(kind, ("cosine", "cos"))
        v = f.get(key)
        words = f"{word} {'-' if v is None else f'{v:.4f}' if key == 'cosine' else f'{100 * v:.1f}%'}"
    return f"`{o.get('name') or '?'}` {words}" + (" MISS" if f.get("passed") is False else "")


TASKS_HEADING = "## Beyond classifiers (issue 15)"


N_TASK_SCENES = 400  # bench/zoo_tasks.N_CALIB: test scenes in each task model's .npz


def _held_out(done: list[dict[str, Any]]) -> str:
    """The held-out sample counts the task models on the zoo's own split were validated on, as their manifests say
    (rows with a split of their own, the MediaPipe photos, say theirs); edgekit's quarter where none was run here."""
    counts = {(a.get("fidelity") or {}).get("samples") for r in done if not (r.get("source") or {}).get("calib_size")
              for a in (r.get("manifest") or {}).get("artifacts", [])} - {None}
    return "/".join(str(c) for c in sorted(counts)) or str(round(N_TASK_SCENES / 4))


def _task_outputs(man: dict[str, Any]) -> str:
    """The source's outputs as the first validated artifact judged them: name, shape, kind."""
    arts = man.get("artifacts", [])
    for a in sorted(arts, key=lambda a: a["format"] != "onnx"):  # ONNX's first; a .tflite source has none
        outs = (a.get("fidelity") or {}).get("outputs") or []
        if outs:
            return ", ".join(f"`{o['name']}` {'x'.join(map(str, o['shape'][1:]))} {o['kind']}" for o in outs)
    return "-"


def _busy(done: list[dict[str, Any]]) -> bool:
    """Whether the machine was busier than its cores while the rows converted (their times are then inflated)."""
    seen = [v for v in ((r.get("convert") or {}).get("load_avg") for r in done) if v]
    return not seen or sum(v["mean"] for v in seen) / len(seen) > (seen[0].get("cores") or 1) + 0.5


def _machine_words(done: list[dict[str, Any]]) -> str:
    return (f"shared with other work while measuring ({_load(done)}): times are inflated by that load" if _busy(done)
            else f"little else running while measuring ({_load(done)})")


def _load(done: list[dict[str, Any]]) -> str:
    """The machine's load while the rows run here converted, as their records say (bench/zoo.py samples it)."""
    got = [(r.get("convert") or {}).get("load_avg") for r in done]
    seen = [v for v in got if v]
    if not seen:
        return "its load average was not recorded for these rows"
    mean = sum(v["mean"] for v in seen) / len(seen)
    text = f"1-minute load average {mean:.1f} on average, up to {max(v['max'] for v in seen):.1f}, during the converts"
    return text + (f"; not recorded for {len(got) - len(seen)} of the rows" if len(seen) < len(got) else "")


def _kept_note(kept: list[KeptRow]) -> str:
    dates = sorted({k.run for k in kept})  # one per row where the page dated each row: a span says it shorter
    runs = ", ".join(dates) if len(dates) <= 3 else f"{len(dates)} runs from {dates[0]} to {dates[-1]}"
    return (f"{len(kept)} row(s) marked `(earlier run, DATE)` are kept as docs/zoo.md had them ({runs}): their result "
            "JSONs are not on this machine, so each shows the code and the machine load of its own date; "
            "`python bench/zoo.py run --only NAME` replaces one")


def _kept_state(k: KeptRow) -> str:
    """"full", "partial" or "aborted", read from a kept row's artifact cells as `_row` wrote them."""
    cells = [k.cells.get(c, "") for c in COLUMNS]
    if all(c.startswith("ok") for c in cells):
        return "full"
    if all(c.startswith("**") and not c.startswith("**FAILED") for c in cells):
        return "aborted"
    return "partial"


def _state(r: dict[str, Any]) -> str:
    status = r.get("status", "")
    return "full" if status.startswith("ok") else "partial" if status == "some artifacts failed" else "aborted"


def _misses(r: dict[str, Any]) -> int:
    return sum(1 for a in (r.get("manifest") or {}).get("artifacts", [])
               if a.get("status") == "ok" and not (a.get("fidelity") or {}).get("passed"))


KEPT_MACHINE = " (of the rows run here; a kept row ran on its own run's machine: docs/results/zoo-runs.md)"
CLASSIFIER_HEADER = ["model", "source", "params", "input", "src acc", *COLUMNS, "Edge TPU (predicted)", "time",
                     "peak RSS"]


def report(results: Path = RESULTS, doc: Path = DOC, use_commit: bool = True) -> Path:
    """DOC from every RESULTS/<model>.json; a model without one keeps the row DOC has (marked as from its earlier
    run), and a model on neither is listed as planned, not run. USE_COMMIT: look in DOC's last commit too."""
    recs = load_results(results)
    earlier = earlier_rows(doc, TASKS_HEADING, 0, CLASSIFIER_DATE, "## Failures", use_commit)
    done = [recs[m.name] for m in ZOO if m.name in recs]
    kept = [earlier[m.name] for m in ZOO if m.name not in recs and m.name in earlier]
    todo = [m for m in ZOO if m.name not in recs and m.name not in earlier]
    states = {r["name"]: _state(r) for r in done} | {k.name: _kept_state(k) for k in kept}
    count = {s: sum(1 for v in states.values() if v == s) for s in ("full", "partial", "aborted")}
    misses = sum(map(_misses, done)) + sum("fidelity miss" in k.cells.get(c, "") for k in kept for c in COLUMNS)
    over = sum(over_time(r) or over_rss(r) for r in done) + sum(
        "(over)" in k.cells.get("time", "") + k.cells.get("peak RSS", "") for k in kept)
    tools = next(((r.get("manifest") or {}).get("tool_versions") for r in done if r.get("manifest")), {}) or {}
    command = next((r["command"] for r in done if r.get("command")), "")
    dates = (f"{min(r['date'] for r in done)} to {max(r['date'] for r in done)} (the rows run here)" if done
             else "none of the rows was run here")
    lines = [
        "# Model-zoo coverage",
        "",
        "Generated by `python bench/zoo.py report` from `bench/results/zoo/*.json` (do not edit by hand).",
        "Standard architectures with random weights (no download), BatchNorm statistics set from real images and",
        f"a 10-class head fitted on {N_HEAD} real MNIST training digits (ridge regression on the frozen features),",
        f"converted by the real CLI in a child process, one model at a time. Input {SIZE}x{SIZE}x3: the MNIST test",
        "digits resized and replicated to 3 channels (a uint8 .npz in the source's layout; edgekit scales by 1/255;",
        "Keras applications with their own Rescaling/Normalization layers get 0-255 pixels: `--mean 0 --std 1/255`);",
        f"{CALIB_SIZE} calibrate, {VAL_SIZE} held-out validate. The bundled MNIST CNN uses `--calib mnist`.",
        "The `timm_*` rows (issue 41: the mobile backbones of 2024-26) are timm's, prepared the same way in a Python",
        "with timm that the run is given (`--timm-python PATH` or `ZOO_TIMM_PYTHON`: timm imports torchvision, which",
        "does not load beside edgekit's CPU torch; `bench/zoo_timm.py`): timm's own head removed (`num_classes=0`),",
        "the 10-class head a linear layer on its pooled features, exported with `torch.export` as the transformers",
        "rows; MobileOne, FastViT and RepViT as timm builds them, before re-parameterization. EfficientFormer-L1",
        "runs at 224x224: its attention biases are fixed to a 7x7 last stage.",
        f"Every classifier row is converted with `{' '.join(CLASSIFIER_FLAGS)}`, the recipe the rows of 2026-11-25 ran",
        "at (then the default): edgekit's default is now `auto`, a search within `--int8-budget` per int8 artifact,",
        "and random-weight int8 always misses, so it would search on each row's three int8 artifacts, spending time",
        f"against the {MAX_SECONDS} s bound that the earlier rows did not, with a different recipe in the same table.",
        "",
        f"**Summary: {len(states)} of {len(ZOO)} models have a result ({len(done)} run here, {len(kept)} kept from an "
        f"earlier run and marked so): {count['full']} fully converted, {count['partial']} with per-artifact "
        f"failures, {count['aborted']} aborted or timed out; {misses} artifact(s) made but below the fidelity "
        f"thresholds; {over} over the resource bounds ({MAX_SECONDS} s, {MAX_RSS / 2**30:.0f} GiB); {len(todo)} "
        "planned, not run yet.**",
        "",
        f"- Date: {dates}",
        *([f"- {row_dates(done)}"] if done else []),
        *([f"- Earlier rows: {_kept_note(kept)}"] if kept else []),
        f"- Machine{KEPT_MACHINE if kept and done else ''}: {done[0]['machine'] if done else machine()}, "
        f"{_machine_words(done)}",
        f"- edgekit: {revision_words(done)} (this page was written at commit {_head()})",
        "- Tools: " + (", ".join(f"{k} {v}" for k, v in sorted(tools.items())) or "-"),
        *([f"- Command per model: `{command}`"] if command else []),
        "- Zoo: `python bench/zoo.py run [--only NAME,...] [--skip-done] [--timeout 600] [--max-rss-gb 8] "
        "[--timm-python PATH]`, then "
        "`python bench/zoo.py report`",
        "",
        "Cells: `agree` = top-1 agreement with the source on the held-out digits, `acc` = accuracy against the",
        "labels (`src acc` is the source model's own). `fidelity miss` = made and validated, below edgekit's",
        "thresholds (random weights quantize worse than trained ones). Edge TPU: ops and MACs the pre-flight",
        "predicts on the TPU (no `edgetpu_compiler` here). Time: wall seconds of the convert child; peak RSS: the",
        "largest of the child's own (wait4), its process tree's (PSS, sampled) and the manifest's `run` figures;",
        "**(over)** marks issue 8's bounds. A child is killed past `--timeout` (600 s) or past `--max-rss-gb`",
        "(default 8 GiB: the machine is shared); the status names the cap that applied.",
        "",
        "| " + " | ".join(CLASSIFIER_HEADER) + " |",
        "|" + "---|" * len(CLASSIFIER_HEADER),
    ]
    failures: list[str] = []
    aborted: list[tuple[str, str]] = []
    for m in ZOO:
        if m.name in recs:
            r = recs[m.name]
            row, fails = _row(r)
            lines.append(row)
            for col, f in fails:
                where = (f" at {f['step']}" + (f" (`{f['op']}`)" if f.get("op") else "")) if f.get("step") else ""
                hint = _clean(f.get("hint"), 300)
                failures.append(f"- `{r['name']}` {col}{where}: {_clean(f.get('message'), 400)}"
                                + (f" Hint: {hint}" if hint else ""))
            if states[m.name] == "aborted":
                aborted.append((m.name, r.get("status", "?")))
        elif m.name in earlier:
            k = earlier[m.name]
            lines.append(k.line(CLASSIFIER_HEADER))
            failures += k.failure_lines()
            if states[m.name] == "aborted":
                aborted.append((m.name, k.cells.get(COLUMNS[0], "?").strip("*")))
    lines += ["", "## Failures", ""] + (failures or ["None among the models run."])
    lines += ["", "## Planned, not run yet", ""]
    lines += [f"- `{m.name}`: {m.package} `{m.cls}`" + (f" ({m.note})" if m.note else "")
              + (f": {NEEDS}" if m.package == "timm" else "") for m in todo] or [
        "None: every zoo model has a result."]
    if aborted:
        lines += ["", "Aborted, to run again where there is room (no result is known for them): "
                  + ", ".join(f"`{n}` ({s})" for n, s in aborted) + ". For instance `python bench/zoo.py run --only "
                  + ",".join(n for n, _ in aborted) + " --max-rss-gb 16 --timeout 1800`."]
    lines += task_section(recs, earlier_rows(doc, TASKS_HEADING, 1, TASK_DATE, TASK_FAILURES, use_commit))
    return _write(doc, "\n".join(lines) + "\n")


def _write(doc: Path, text: str) -> Path:
    """Write DOC atomically: others run the zoo (and read the page) while it is rewritten, several at once."""
    doc.parent.mkdir(parents=True, exist_ok=True)
    tmp = doc.with_name(f".{doc.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, doc)
    return doc


TASK_FAILURES = "Failures, fidelity misses, and what pinning changed:"


def report_tasks(results: Path = RESULTS, doc: Path = DOC, use_commit: bool = True) -> Path:
    """Rewrite only DOC's non-classifier section (the classifier table stays as it is)."""
    text = doc.read_text() if doc.is_file() else "# Model-zoo coverage\n"
    earlier = earlier_rows(doc, TASKS_HEADING, 1, TASK_DATE, TASK_FAILURES, use_commit)
    head = text.split("\n" + TASKS_HEADING)[0].rstrip("\n")
    return _write(doc, head + "\n" + "\n".join(task_section(load_results(results), earlier)) + "\n")


TASK_HEADER = ["model", "source", "params", "input", "outputs", "task (source)", *COLUMNS, "time", "peak RSS"]


def task_section(recs: dict[str, dict[str, Any]], earlier: dict[str, KeptRow] | None = None) -> list[str]:
    """docs/zoo.md's section of non-classifiers (issue 15): one row per TASKS model that has a result, from its
    JSON, or else the row EARLIER (the page as it was) has for it, marked as from that run."""
    earlier = earlier or {}
    done = [recs[m.name] for m in TASKS if m.name in recs]
    kept = [earlier[m.name] for m in TASKS if m.name not in recs and m.name in earlier]
    when = (f"Run {min(r['date'] for r in done)} to {max(r['date'] for r in done)} on {done[0]['machine']}, "
            f"{_machine_words(done)}; {revision_words(done)}." if done else "None of the rows was run here.")
    lines = ["", TASKS_HEADING, "",
             "Built and trained in code by `bench/zoo_tasks.py` (no download), briefly (a few hundred steps on the",
             "bundled MNIST training digits), with real inputs: scenes, lines and digits made of the 1,000 MNIST test",
             f"digits ({N_TASK_SCENES} per model: {CALIB_SIZE} calibrate, {_held_out(done)} held-out validate).",
             "The `ppocr_*` rows are trained third-party models (PP-OCR ONNX from the `rapidocr-onnxruntime` wheel,",
             "Paddle2ONNX exports) on text rendered with PIL (pages for det, word lines for rec, lines and their",
             "180-degree rotations, labelled, for cls), preprocessed as PP-OCR does.",
             "The `mp_*` rows (issue 37) are MediaPipe 0.10.21's trained fp16 .tflite graphs, read out of its wheel",
             "(`bench/zoo_mediapipe.py`), on 93 bundled photos (scikit-image's and scikit-learn's, whole and as square",
             "crops; two photos hold a person, none a hand; 60 calibrate, 23 held-out validate):",
             "`--target tflite,edgetpu --quantize fp16,int8`, the",
             "`tflite fp32` column holding the file itself at fp16 and the ONNX columns n/a; their outputs are judged",
             "as masks (agreement at 0.5, IoU, regions kept), landmarks (mean and 95th-percentile move in input",
             "pixels and as a share of the side), scores (decisions at 0.5 kept, probability change) and raw-anchor",
             "detection heads (boxes decoded against MediaPipe's anchors, keypoints' move), each output in its cell.",
             "These photos hold no hand and no face region as MediaPipe crops it: the same graphs on real photos of",
             "people, each fed the input MediaPipe's own pipeline gives it, are measured in",
             "[results](results/mediapipe.md#ranges-a-sigmoid-reads-equalization-through-relu-ops-and-w8a16).",
             "Each cell: the artifact's worst output,",
             "judged as its kind (edgekit.fidelity: `px` per-pixel argmax agreement of a dense map, `step` per-step",
             "argmax agreement of a sequence, `cos` cosine of a regression map; mIoU where the .npz has label masks;",
             "a detector head by its `boxes:` the source's boxes the artifact keeps (`recall`) and the artifact's that",
             "are the source's (`precision`) after the 0.25 confidence cut and NMS, same class at IoU 0.5, and `mAP50`",
             "against labelled boxes where the .npz has them, the source's beside it; where the source finds fewer",
             "than 20 boxes on the held-out inputs, boxes cannot show the bar and the raw output's `cos` decides:",
             "expected of a random-weight detector with Ultralytics' bias prior, whose scores sit far below 0.25);",
             "`--json` and the manifest hold every output. `task` is the source model's own figure on test data.",
             f"Bounds: {MAX_SECONDS} s and {MAX_RSS / 2**30:.0f} GiB per model for the whole matrix (`time`: wall",
             "seconds "
             "of the convert child; building and training each model is a separate child, "
             f"{', '.join(str((r.get('build') or {}).get('seconds')) for r in done) or '-'} s here).",
             when, *([row_dates(done)] if done else []), *([_kept_note(kept) + "."] if kept else []), "",
             "| " + " | ".join(TASK_HEADER) + " |", "|" + "---|" * len(TASK_HEADER)]
    failures: list[str] = []
    changes: list[str] = []
    cells: list[str] = []  # every requested artifact's cell, rows run here and kept alike
    for m in TASKS:
        if m.name in recs:
            row, fails = _task_row(recs[m.name])
            lines.append("| " + " | ".join(row) + " |")
            cells += [row[TASK_HEADER.index(c)] for c in COLUMNS]
            failures += fails
            tflite = str((recs[m.name].get("source") or {}).get("file", "")).endswith(".tflite")
            verb = "rewritten" if tflite else "pinned"  # a .tflite's custom ops; an ONNX's shapes and opset
            changes += [f"- `{m.name}` {verb} before any step: {c}"
                        for c in ((recs[m.name].get("manifest") or {}).get("source") or {}).get("changes") or []]
        elif m.name in earlier:
            k = earlier[m.name]
            lines.append(k.line(TASK_HEADER))
            cells += [k.cells.get(c, "") for c in COLUMNS]
            failures += k.failure_lines()
    n = len(done) + len(kept)
    n_cells = len(cells)
    cells = [c for c in cells if not c.startswith("n/a")]  # columns a row did not ask for (a .tflite source's ONNX)
    passing, misses = sum(c.startswith("ok:") for c in cells), sum(c.startswith("ok, ") for c in cells)
    failed = sum(c.startswith("**FAILED") for c in cells)
    asked = (f"{n} task models x {len(COLUMNS)}" if len(cells) == n_cells else
             f"{n} task models x {len(COLUMNS)}, less {n_cells - len(cells)} n/a: no ONNX of a .tflite source")
    lines.append(f"\n**{passing} of {len(cells)} artifacts requested ({asked}) made and "
                 f"passing on every output; {misses} made below the thresholds, {failed} failed on their own, "
                 f"{len(cells) - passing - misses - failed} never made (their run was killed, timed out or aborted)"
                 + (f"; {len(kept)} of the models from an earlier run" if kept else "") + ".**")
    if done:
        lines.append(f"\nCommand per model, e.g.: `{done[-1].get('command', '')}`")
    lines += ["", TASK_FAILURES, ""] + (failures + changes or ["None."])
    todo = [m.name for m in TASKS if m.name not in recs and m.name not in earlier]
    if todo:
        lines += ["", "Not run yet: " + ", ".join(f"`{n}`" for n in todo) + " (`python bench/zoo.py run --tasks`)."]
    return lines


def _na(column: str, src: dict[str, Any]) -> str:
    """"n/a ..." for a column the row did not ask for (a .tflite source has no ONNX target), else ""."""
    targets = (src.get("targets") or TARGETS).split(",")
    if column.split()[0] not in targets:
        return f"n/a (a .{Path(str(src.get('file', ''))).suffix.lstrip('.') or '?'} source)"
    return ""


def _task_row(r: dict[str, Any]) -> tuple[list[str], list[str]]:
    """A task model's table cells (TASK_HEADER) from its result record, and its failure and fidelity-miss lines."""
    src, man = r.get("source") or {}, r.get("manifest") or {}
    arts = {_column(a): a for a in man.get("artifacts", [])}
    status = r.get("status", "?")
    asked = src.get("precisions") or PRECISIONS
    if "fp32" not in asked.split(",") and "tflite fp16" in arts:  # an fp16 .tflite: its float column is fp16
        arts["tflite fp32"] = arts.pop("tflite fp16")
    cells = [_na(c, src) or (_task_cell(arts.get(c)) if man else f"**{status}**") for c in COLUMNS]
    if "fp32" not in asked.split(",") and cells[COLUMNS.index("tflite fp32")].startswith("ok"):
        head, _, rest = cells[COLUMNS.index("tflite fp32")].partition(": ")
        cells[COLUMNS.index("tflite fp32")] = f"{head}: fp16 (the file itself), {rest}"
    tpu = (arts.get("edgetpu int8") or {}).get("extra", {}).get("edgetpu") or {}
    if tpu.get("ops_total"):  # the pre-flight's prediction (no edgetpu_compiler here)
        cells[-1] += f"; TPU (predicted) {tpu['ops_on_tpu']}/{tpu['ops_total']} ops" + (
            f", {_pct(tpu['macs_on_tpu_fraction'])} of MACs" if tpu.get("macs_on_tpu_fraction") is not None else "")
    conv = r.get("convert") or {}
    row = [f"`{r['name']}`", f"{r['class']} ({r.get('note', '')})", _size(src.get("params"), ""),
           str(src.get("input", "-")), _task_outputs(man), str(src.get("task", "-")), *cells,
           _bound(f"{conv.get('seconds', '-')} s", over_time(r)), _bound(_size(peak_rss(r)), over_rss(r))]
    failures: list[str] = []
    for col, a in arts.items():
        f = a.get("failure") or {}
        if a.get("status") == "failed":
            failures.append(f"- `{r['name']}` {col} at {f.get('step')}: {_clean(f.get('message'), 400)}")
        elif not (a.get("fidelity") or {}).get("passed"):
            failures.append(f"- `{r['name']}` {col}: {_clean('; '.join(a['fidelity'].get('failures') or []), 400)}")
    if not man:
        tail = [ln for ln in (conv or r.get("build") or {}).get("log_tail", "").splitlines() if ln.strip()]
        failures.append(f"- `{r['name']}`: {status}: {_clean(tail[-1] if tail else '(no log)', 300)}")
    return row, failures
