"""Fuzz targets: every parser of untrusted bytes edgekit owns or calls in-process, fed mutated real files.

A target writes one case (bytes) where its parser reads it and calls the parser the way edgekit's
commands do. The verdict of a case (`run_case`):
- "ok": parsed; "refused": an EdgekitError (or, for the server's decoding, its RequestError): both fine;
- "finding": any other exception (a traceback a user would see), an InternalError (edgekit calling its
  own bug), or a case slower than HANG_S.
A crash of the process (a native reader) is seen by whoever runs the cases in a child: bench/fuzz.py.

Cases are mutations of the real seed files (`edgekit.testing.fuzz_seeds`): hypothesis draws a 64-bit
case number, which `expand` turns into a small program of edits: byte-level edits (bit flips, interesting
integers, inserts,
deletes, duplicated chunks, truncation, splices of two seeds) and, for JSON files, edits of the parsed
tree (a value replaced by any JSON value, deleted or duplicated; the document nested very deep).
"""

from __future__ import annotations

import json
import random
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgekit.core.errors import EdgekitError, InternalError

HANG_S = 10.0
INTERESTING = (0, 1, -1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, -0x80000000, 0xFFFFFFFF, 0x10000, 64)
BYTE_OPS = ("flip", "set", "int", "truncate", "delete", "insert", "dup", "splice")
TREE_OPS = ("replace", "delete", "dup")
BLOBS = (b"\0" * 8, b"\xff" * 8, b"-1", b"{", b"[", b"\x7f\xff\xff\xff")


@dataclass
class Context:
    """What targets share: the seeds folder, a scratch folder for case files, and facts read once."""

    seeds: Path
    scratch: Path
    cache: dict[str, Any] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        if "manifest" not in self.cache:
            self.cache["manifest"] = json.loads((self.seeds / "manifest.json").read_text())
        return self.cache["manifest"]

    def spec(self, artifact_suffix: str) -> Any:
        from edgekit.core.artifact import TensorSpec

        art = next(a for a in self.manifest()["artifacts"] if a["path"].endswith(artifact_suffix))
        return TensorSpec.from_dict(art["inputs"][0]), [TensorSpec.from_dict(o) for o in art["outputs"]]


@dataclass(frozen=True)
class Target:
    name: str
    seeds: tuple[str, ...]
    run: Callable[[Path, Context], Any]  # parse the case file at the path, as edgekit would
    json: bool = False  # JSON seeds: tree edits as well as byte edits
    needs: str | None = None  # a module that must import (a feature another issue is building)
    what: str = ""

    def seed_files(self, folder: Path) -> list[Path]:
        """The seeds of this target present in FOLDER (the repository holds the small ones)."""
        return [folder / s for s in self.seeds if (folder / s).is_file()]


# ------------------------------------------------------------------ the parsers, as edgekit calls them


def _inspect(path: Path, ctx: Context) -> Any:
    from edgekit.inspect import inspect_model

    return inspect_model(path).to_dict()


def _calib(path: Path, ctx: Context) -> Any:
    from edgekit.data.calibration import load_samples

    return load_samples(str(path), [1, 1, 28, 28], "NCHW")


def _calib_named(path: Path, ctx: Context) -> Any:
    """--calib x.npz for a model whose input is named: one array per input name (and "masks"),
    edgekit.data.feeds."""
    from edgekit.data.feeds import split_named

    return split_named(str(path), [("x", [1, 1, 28, 28], "float32")], "NCHW", calib_size=8, val_size=8, batch=1)


def _calib_images(path: Path, ctx: Context) -> Any:
    """The case is one image in a folder of class subfolders beside a good one; grey and RGB inputs."""
    from edgekit.data.calibration import load_samples

    folder = path.parent / "images"
    for sub in ("a", "b"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    good = folder / "a" / "good.png"
    if not good.exists():
        good.write_bytes((ctx.seeds / "digit.png").read_bytes())
    case = folder / "b" / f"case{path.suffix}"
    case.write_bytes(path.read_bytes())
    shape = [1, 3, 32, 32] if path.suffix == ".jpg" else [1, 1, 28, 28]
    return load_samples(str(folder), shape, "NCHW")


def _manifest(path: Path, ctx: Context) -> Any:
    from edgekit.core.artifact import Manifest

    return Manifest.read(path)


def _bench_report(path: Path, ctx: Context) -> Any:
    """bench.json as `edgekit check` reads it: the real manifest beside a mutated bench/bench.json."""
    from edgekit.check.snapshot import from_folder

    folder = path.parent / "out"
    (folder / "bench").mkdir(parents=True, exist_ok=True)
    if not (folder / "manifest.json").exists():
        (folder / "manifest.json").write_bytes((ctx.seeds / "manifest.json").read_bytes())
    (folder / "bench" / "bench.json").write_bytes(path.read_bytes())
    return from_folder(folder, inspect=False)


def _bench_record(path: Path, ctx: Context) -> Any:
    """bench.json read back into its record, as bench_report documents (`BenchReport.from_dict`)."""
    from edgekit.check.files import read_json
    from edgekit.measure.bench_report import BenchReport

    data = read_json(path, "bench report")
    if not isinstance(data, dict):
        raise _Refused("not an object")
    return BenchReport.from_dict(data)


def _baseline(path: Path, ctx: Context) -> Any:
    from edgekit.check.snapshot import load_baseline

    return load_baseline(str(path))


def _serve_infer(path: Path, ctx: Context) -> Any:
    """A KServe v2 /infer request: the first line is the Inference-Header-Content-Length header."""
    from edgekit.serve.protocol import parse_infer
    from edgekit.serve.tensors import wire_tensors

    raw = path.read_bytes()
    head, _, body = raw.partition(b"\n")
    header = None if head == b"-" else head.decode("latin-1")
    spec, outs = ctx.spec("int8.tflite")
    return parse_infer(body, header, wire_tensors([spec]), wire_tensors(outs))


def _serve_image(path: Path, ctx: Context) -> Any:
    from edgekit.core.artifact import Preprocessing
    from edgekit.serve.image import image_input

    pre = ctx.manifest().get("preprocessing")
    spec, _ = ctx.spec("int8.tflite" if path.suffix == ".png" else "fp32.onnx")
    if path.suffix == ".jpg":  # the photo goes to a 3-channel input of the same size
        spec.shape = [1, 3, 28, 28]
        spec.layout = "NCHW"
        pre = None
    return image_input(path.read_bytes(), spec, Preprocessing.from_dict(pre) if isinstance(pre, dict) else None,
                       max_pixels=24_000_000)


class _Refused(EdgekitError):
    """A target's own refusal of a case its parser would not be given (not a finding)."""


IMAGES = ("digit.png", "photo.jpg", "bomb-header.png", "bomb-pixels.png")
TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("inspect-tflite", ("mnist_cnn.int8.tflite", "mnist_cnn.fp32.tflite"), _inspect,
           what="edgekit inspect of a .tflite (flatbuffer reader, MACs, Edge TPU pre-flight)"),
    Target("inspect-onnx", ("mnist_cnn.int8.onnx", "mnist_cnn.fp32.onnx"), _inspect,
           what="edgekit inspect of an .onnx (protobuf, shape inference, MACs)"),
    Target("calib-npy", ("digits.u8.npy", "digits.f32.npy"), _calib, what="--calib x.npy"),
    Target("calib-npz", ("digits.npz", "digits-plain.npz"), _calib, what="--calib x.npz"),
    Target("calib-npz-named", ("digits.npz", "digits-plain.npz"), _calib_named, needs="edgekit.data.feeds",
           what="--calib x.npz read by input name (multi-input models)"),
    Target("calib-images", IMAGES, _calib_images, what="--calib FOLDER of images (corrupt and bomb images)"),
    Target("manifest", ("manifest.json",), _manifest, json=True, what="manifest.json (Manifest.read)"),
    Target("bench-report", ("bench.json",), _bench_report, json=True, needs="edgekit.check.snapshot",
           what="bench/bench.json as edgekit check reads it"),
    Target("bench-record", ("bench.json",), _bench_record, json=True, needs="edgekit.check.files",
           what="bench.json into BenchReport.from_dict"),
    Target("baseline", ("baseline.json",), _baseline, json=True, needs="edgekit.check.snapshot",
           what="an edgekit check baseline (load_baseline)"),
    Target("serve-infer", ("infer-json.req", "infer-binary.req"), _serve_infer, needs="edgekit.serve.protocol",
           what="edgekit serve: a KServe v2 /infer request (JSON and binary extension)"),
    Target("serve-image", ("digit.png", "photo.jpg", "bomb-header.png", "bomb-pixels.png"), _serve_image,
           needs="edgekit.serve.image", what="edgekit serve: an uploaded JPEG/PNG for /classify"),
)}


def allowed_errors() -> tuple[type[BaseException], ...]:
    """What a parser may raise on bad bytes: edgekit's errors, and the server's HTTP answer."""
    try:
        from edgekit.serve.errors import RequestError
    except ImportError:
        return (EdgekitError,)
    return (EdgekitError, RequestError)


def missing(target: Target) -> str | None:
    """Why TARGET cannot run here (its module has not landed), or None."""
    if target.needs is None:
        return None
    import importlib

    try:
        importlib.import_module(target.needs)
    except ImportError as exc:
        return f"{target.needs} is not importable here ({exc})"
    return None


# ------------------------------------------------------------------ mutations


def programs(target: Target) -> Any:
    """The hypothesis strategy of one case of TARGET: a 64-bit case seed, expanded into a program of edits.

    Hypothesis draws the seed (about 1 ms a case, against 3-7 ms for drawing the edits one by one);
    `expand` turns it into which seed file and which edits, so a case is named by one integer.
    """
    from hypothesis import strategies as st

    return st.integers(0, 2**64 - 1).map(lambda case: expand(case, target))


def _num(r: random.Random) -> int:
    return r.randrange(65) if r.random() < 0.5 else r.getrandbits(32)  # small numbers as often as any


def _json_value(r: random.Random, depth: int = 2) -> Any:
    pick = r.randrange(10 if depth else 7)
    if pick == 0:
        return None
    if pick == 1:
        return r.random() < 0.5
    if pick == 2:
        return r.choice([0, -1, 1, 2**31, 2**63, 10**30, -(10**30), r.getrandbits(16)])
    if pick == 3:
        return r.choice([0.0, -0.0, 1e308, -1e308, float("nan"), float("inf"), float("-inf"), r.random()])
    if pick in (4, 5, 6):
        return r.choice(["", "-1", "1e999", "NaN", "../../etc/passwd", "x" * 70_000, "\u0000", "é", "int8", "onnx",
                         "ok", "failed", r.randbytes(6).hex()])
    if pick in (7, 8):
        return [_json_value(r, depth - 1) for _ in range(r.randrange(4))]
    return {r.choice(["path", "x", "", "seconds", "shape", "scale"]): _json_value(r, depth - 1)
            for _ in range(r.randrange(4))}


def expand(case: int, target: Target) -> dict[str, Any]:
    """The program of edits that CASE (a 64-bit integer) names for TARGET: deterministic."""
    r = random.Random(case)
    n = len(target.seeds)
    edits = []
    for _ in range(r.choice((0, 1, 1, 2, 2, 3, 4, 6)) if not target.json else r.choice((0, 0, 1, 2, 3))):
        blob = r.randbytes(r.randrange(17)) if r.random() < 0.7 else r.choice(BLOBS)
        edits.append((r.choice(BYTE_OPS), _num(r), _num(r), blob))
    tree = [(r.choice(TREE_OPS), _num(r), _json_value(r)) for _ in range(r.choice((0, 1, 1, 2, 3, 6)))] \
        if target.json else []
    nest = r.choice((0,) * 12 + (50, 5_000, 200_000)) if target.json else 0
    if not edits and not tree and not nest:  # never the seed itself: it is run once on its own
        edits.append(("flip", _num(r), _num(r), b""))
    return {"case": case, "seed": r.randrange(n), "other": r.randrange(n), "bytes": edits, "tree": tree,
            "nest": nest}


def mutate(program: dict[str, Any], seeds: list[bytes]) -> bytes:
    """The case PROGRAM describes, made from SEEDS (deterministic)."""
    data = seeds[program["seed"] % len(seeds)]
    if program["tree"] or program["nest"]:
        data = _tree_edit(data, program["tree"], program["nest"])
    buf = bytearray(data)
    other = seeds[program["other"] % len(seeds)]
    for op, a, b, blob in program["bytes"]:
        _byte_edit(buf, op, a, b, blob, other)
    return bytes(buf)


def _pos(buf: bytearray, a: int, b: int) -> int:
    n = max(len(buf), 1)
    return a % n if b & 1 else max(n - 1 - a % n, 0)  # near the start or near the end, as often


def _byte_edit(buf: bytearray, op: str, a: int, b: int, blob: bytes, other: bytes) -> None:
    if not buf and op not in ("insert", "splice"):
        return
    p = _pos(buf, a, b)
    if op == "flip":
        buf[p] ^= 1 << (b % 8)
    elif op == "set":
        buf[p:p + len(blob)] = blob
    elif op == "int":
        v = INTERESTING[b % len(INTERESTING)]
        buf[p:p + 4] = (v & 0xFFFFFFFF).to_bytes(4, "little" if b & 2 else "big")
    elif op == "truncate":
        del buf[p:]
    elif op == "delete":
        del buf[p:p + 1 + b % 256]
    elif op == "insert":
        buf[p:p] = blob
    elif op == "dup":
        buf[b % max(len(buf), 1):b % max(len(buf), 1)] = buf[p:p + 1 + b % 1024]
    elif op == "splice" and other:
        buf[p:] = other[b % len(other):]


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


def _tree_edit(data: bytes, ops: list[tuple[str, int, Any]], nest: int) -> bytes:
    try:
        doc = json.loads(data)
    except ValueError:
        return data
    for op, a, value in ops:
        paths = _paths(doc)
        path = paths[a % len(paths)]
        if not path:
            doc = value if op == "replace" else doc
            continue
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if op == "replace":
            parent[key] = value
        elif op == "delete":
            del parent[key]
        elif op == "dup" and isinstance(parent, list):
            parent.insert(key, parent[key])
        elif op == "dup":
            parent[f"{key}_"] = parent[key]
    text = json.dumps(doc)
    return ("[" * nest + text + "]" * nest).encode() if nest else text.encode()


# ------------------------------------------------------------------ one case


@dataclass
class Outcome:
    verdict: str  # ok | refused | finding
    seconds: float
    error: str = ""  # "TypeError: ..." of a finding
    where: str = ""  # the innermost frame of a finding: file:line (function)


def case_path(ctx: Context, files: list[Path], program: dict[str, Any]) -> Path:
    """Where the case goes: named like the seed it was made from (parsers that look at suffixes)."""
    return ctx.scratch / f"case{files[program['seed'] % len(files)].suffix}"


def run_case(target: Target, ctx: Context, data: bytes, path: Path) -> Outcome:
    """Write DATA to PATH, run TARGET's parser on it, and judge what happened."""
    path.write_bytes(data)
    allowed = allowed_errors()
    t0 = time.perf_counter()
    try:
        target.run(path, ctx)
        verdict, error, where = "ok", "", ""
    except InternalError as exc:  # edgekit's own "this is a bug" answer: a clean exit 1, but a bug all the same
        verdict, error, where = "finding", f"InternalError: {exc.message[:300]}", _where(exc)
    except allowed:
        verdict, error, where = "refused", "", ""
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - judging them is the point
        verdict, error, where = "finding", f"{type(exc).__name__}: {str(exc)[:300]}", _where(exc)
    seconds = time.perf_counter() - t0
    if verdict != "finding" and seconds > HANG_S:
        verdict, error, where = "finding", f"hang: {seconds:.1f} s (over {HANG_S:.0f} s)", ""
    return Outcome(verdict, seconds, error, where)


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    ours = [fr for fr in frames if "/edgekit/" in fr.filename and "/testing/" not in fr.filename]
    mine = f" via {Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours and ours[-1] is not f else ""
    return f"{Path(f.filename).name}:{f.lineno} ({f.name}){mine}"


__all__ = ["BYTE_OPS", "HANG_S", "TARGETS", "Context", "Outcome", "Target", "allowed_errors", "case_path", "missing",
           "expand", "mutate", "programs", "run_case"]
