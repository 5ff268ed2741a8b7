"""Every registry entry, enrolled from the tables themselves, through one black-box contract (as ExecuTorch's
backend suite): a target or precision, a source or a runtime added later gets its cases here without a line
of this file changing, and an entry that yields no case fails.

- TARGETS x each target's precisions: plan -> convert -> validate (passes its thresholds) -> profile (the
  format's own runtime) -> serve (one `edgekit serve` process serving every artifact, asked by tritonclient).
- SOURCES: every source reads a tiny CNN file of its kind (edgekit.testing.tiny_cnn) and converts it to a
  validated artifact.
- runtimes (the formats' own and RUNTIMES): every runtime loads every artifact format the targets make that it
  declares, and keeps the runtime contract (tests/runtimes/test_runtime_conformance.py) on it.

The models are the tiny CNN (same weights in every form) converted by edgekit itself, so a new target's
format is in the runtime cases the moment the target exists.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgekit.core.formats import FORMATS
from edgekit.runtimes import get_runtime, runtime_names
from edgekit.sources import SOURCES
from edgekit.targets import TARGETS, get_target
from edgekit.testing import tiny_cnn

pytestmark = pytest.mark.slow

TARGET_CASES = [(t, p) for t in TARGETS for p in get_target(t).precisions]
# (runtime, target, precision): each runtime on every artifact format a target makes that it declares it loads
# (runtime, precision) -> why it refuses: a runtime that would compute an artifact wrongly must refuse it by name
REFUSED = {("openvino", "w8a16"): "16-bit quantize/dequantize"}
RUNTIME_CASES = [(rt, t, p) for rt in runtime_names() for t, p in TARGET_CASES
                 if get_target(t).format in get_runtime(rt).formats]


def _available(module: str) -> bool:
    from edgekit.core._deps import available

    return available(module)


@pytest.fixture(scope="session")
def every_target(tiny_models: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tiny CNN's .pt2 converted by edgekit to every target at every precision it offers: {target: manifest
    dict, "folder": {target: Path}}, one `convert` per target (their precision lists differ)."""
    from edgekit.conversion.pipeline import convert

    if "torch-pt2" not in tiny_models["models"]:
        pytest.skip(f"no tiny .pt2 here: {tiny_models['skipped']}")
    out: dict[str, Any] = {"folder": {}}
    base = tmp_path_factory.mktemp("every-target")
    for target in TARGETS:
        spec = get_target(target)
        missing = [m for name in spec.steps for m in _step_modules(name) if not _available(m)]
        if missing:
            out[target] = f"not installed: {', '.join(missing)}"
            continue
        folder = base / target
        convert(tiny_models["models"]["torch-pt2"], target, ",".join(spec.precisions), calib="mnist",
                calib_size=100, val_size=100, out=folder)
        out[target] = json.loads((folder / "manifest.json").read_text())
        out["folder"][target] = folder
    return out


def _digits(n: int) -> np.ndarray:
    """N held-out MNIST digits as the tiny CNN takes them (NCHW float in [0, 1]): what the int8 artifacts were
    calibrated for (uniform noise is out of their calibration and judges the calibrator, not the runtime)."""
    from edgekit.data.calibration import mnist_split

    x_test = mnist_split()[2][-n:]
    return (x_test.astype(np.float32) / 255.0)[:, None]


def _step_modules(name: str) -> tuple[str, ...]:
    from edgekit.steps import get_step

    return get_step(name).modules


def _artifact(every_target: dict[str, Any], target: str, precision: str) -> tuple[dict[str, Any], Path]:
    made = every_target[target]
    if isinstance(made, str):
        pytest.skip(f"target {target}: {made}")
    fmt = get_target(target).format
    arts = [a for a in made["artifacts"] if a["format"] == fmt and a["precision"] == precision]
    assert arts, f"{target} {precision}: no artifact in the manifest ({[a['path'] for a in made['artifacts']]})"
    return arts[0], every_target["folder"][target] / arts[0]["path"]


def test_every_registry_entry_yields_a_case() -> None:
    """An entry the suite cannot reach fails here: a target with no precision, a runtime that loads no format any
    target makes or any tiny model has, a source with no tiny model of its kind."""
    for target in TARGETS:
        assert [c for c in TARGET_CASES if c[0] == target], f"target {target} offers no precision"
    tiny_formats = {fmt for fmt, _, _ in tiny_cnn.kinds().values()}
    for rt in runtime_names():
        formats = set(get_runtime(rt).formats)
        assert [c for c in RUNTIME_CASES if c[0] == rt] or formats & tiny_formats, (
            f"runtime {rt} loads {sorted(formats)}: no target makes them and edgekit.testing.tiny_cnn has none")
    for fmt, spec in FORMATS.items():
        if spec.runtime is not None:
            assert spec.runtime in runtime_names(), f"format {fmt} names runtime {spec.runtime}, which no record brings"


@pytest.mark.parametrize(("target", "precision"), TARGET_CASES, ids=[f"{t}-{p}" for t, p in TARGET_CASES])
def test_target_converts_validates_and_profiles(target: str, precision: str, every_target: dict[str, Any]) -> None:
    from edgekit.measure.profile import profile_artifact
    from edgekit.measure.settings import MeasureSettings

    art, path = _artifact(every_target, target, precision)
    assert art["status"] == "ok", art.get("failure")
    assert art["fidelity"] is not None and art["fidelity"]["passed"], art["fidelity"]
    assert art["sha256"] and art["size_bytes"] > 0 and path.is_file()
    for companion in FORMATS[art["format"]].companions:  # published with it
        assert path.with_suffix(companion).is_file()
    result = profile_artifact(path, device="cpu", settings=MeasureSettings(runs=3, min_seconds=0, warmup=1))
    assert result.artifact.format == art["format"] and result.artifact.sha256 == art["sha256"]
    assert result.latency_ms.p50 > 0 and result.runtime.name == FORMATS[art["format"]].runtime


@pytest.fixture(scope="module")
def served_every_target(every_target: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One `edgekit serve` process per target, serving every artifact it made: {target: server}, each server with
    `names` (file name -> the model name serve gives it, by serve's own naming on the same paths)."""
    from edgekit.serve.models import resolve_models
    from edgekit.testing.server import ServerProcess

    servers = {}
    try:
        for target, folder in every_target["folder"].items():
            paths = [folder / a["path"] for a in every_target[target]["artifacts"] if a["status"] == "ok"]
            server = ServerProcess([*map(str, paths), "--device", "cpu"], folder / "server.log")
            server.names = {c.path.name: c.name for c in resolve_models(paths, "cpu")}  # type: ignore[attr-defined]
            servers[target] = server
        yield servers
    finally:
        codes = {t: s.stop() for t, s in servers.items()}
    assert set(codes.values()) <= {0}, {t: servers[t].text()[-1500:] for t, c in codes.items() if c}


@pytest.mark.parametrize(("target", "precision"), TARGET_CASES, ids=[f"{t}-{p}" for t, p in TARGET_CASES])
def test_target_is_served(target: str, precision: str, every_target: dict[str, Any], served_every_target: Any) -> None:
    """Each artifact answers a KServe v2 request from tritonclient with the tiny CNN's outputs (int8: close)."""
    tritonhttp = pytest.importorskip("tritonclient.http")
    art, path = _artifact(every_target, target, precision)
    server = served_every_target[target]
    client = tritonhttp.InferenceServerClient(server.url)
    name = server.names[path.name]
    assert client.is_model_ready(name), server.text()[-2000:]
    meta = client.get_model_metadata(name)
    spec = meta["inputs"][0]
    x = _digits(4)
    feed = x if int(spec["shape"][-1]) == 28 else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    ys = []
    for i in range(len(x)):  # one sample a request: a static batch of 1 is served too
        inp = tritonhttp.InferInput(spec["name"], list(feed[i:i + 1].shape), "FP32")
        inp.set_data_from_numpy(feed[i:i + 1].astype(np.float32))
        ys.append(client.infer(name, [inp]).as_numpy(meta["outputs"][0]["name"]).astype(np.float32))
    y, ref = np.concatenate(ys).reshape(len(x), -1), tiny_cnn.forward(x)
    cos = (y * ref).sum(1) / np.linalg.norm(y, axis=1) / np.linalg.norm(ref, axis=1)
    assert cos.min() > (0.9999 if precision == "fp32" else 0.99), cos


@pytest.mark.parametrize("source", list(SOURCES))
def test_source_reads_its_tiny_model_and_converts(source: str, tiny_models: dict[str, Any], tmp_path: Path) -> None:
    from edgekit.conversion.pipeline import convert

    mine = [(key, Path(p)) for key, p in tiny_models["models"].items() if _source_of(Path(p)) == source]
    if not mine:
        skipped = "; ".join(f"{k}: {why}" for k, why in tiny_models["skipped"].items())
        assert skipped, f"source {source}: no file in edgekit.testing.tiny_cnn is of its kind: add one"
        pytest.skip(f"source {source}: its tiny model was not built here ({skipped})")
    key, path = mine[0]
    target = "tflite" if tiny_cnn.kinds()[key][0] == "tflite" else "onnx"  # a .tflite is adopted, not converted
    precision = tiny_cnn.kinds()[key][1]
    result = convert(path, target, precision, calib="mnist", calib_size=50, val_size=100, out=tmp_path / "o")
    arts = [a for a in result.manifest.artifacts if a.ok]
    assert arts and all(a.fidelity is not None and a.fidelity.passed for a in arts), [a.fidelity for a in arts]
    assert result.manifest.source.kind in get_source_kinds(source)


def _source_of(path: Path) -> str | None:
    """The SOURCES entry that reads PATH, or None (an artifact-only format: an OpenVINO IR)."""
    from edgekit.core.errors import UnsupportedModel
    from edgekit.sources import source_for_kind
    from edgekit.sources.detect import detect

    try:
        return source_for_kind(detect(path)).name
    except UnsupportedModel:
        return None


def get_source_kinds(source: str) -> tuple[str, ...]:
    from edgekit.sources import get_source

    return get_source(source).kinds


@pytest.mark.parametrize(("rt_name", "target", "precision"), RUNTIME_CASES,
                         ids=[f"{r}-{t}-{p}" for r, t, p in RUNTIME_CASES])
def test_runtime_keeps_the_contract_on_every_target_format(rt_name: str, target: str, precision: str,
                                                           every_target: dict[str, Any]) -> None:
    """The runtime contract on edgekit's own artifacts: each runtime on each format a target makes."""
    from edgekit.core.errors import UnsupportedModel
    from edgekit.testing.runtime_contract import check_contract

    art, path = _artifact(every_target, target, precision)
    cls = get_runtime(rt_name)
    ok, why = cls.available("cpu")
    if not ok:
        pytest.skip(f"{rt_name}: {why}")
    rt = cls()
    if (rt_name, precision) in REFUSED:
        with pytest.raises(UnsupportedModel, match=REFUSED[rt_name, precision]) as refused:
            rt.load(path, device="cpu")
        assert refused.value.hint
        return
    rt.load(path, device="cpu")
    try:
        x = _digits(8)
        check_contract(rt, precision, art["inputs"][0]["dtype"], "cpu", x, tiny_cnn.forward(x))
    finally:
        rt.close()
