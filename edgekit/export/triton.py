"""A Triton model repository (and a KServe InferenceService) from the artifacts of a conversion Triton can serve.

The same artifacts move to a cluster without edgekit in the request path: each format with a Triton backend
(edgekit.core.formats.FORMATS `triton_backend`: ONNX by onnxruntime, the OpenVINO IR by openvino) is served from
`<name>/1/model<suffix>` (and its companions: the IR's model.bin) as its `config.pbtxt` describes it (inputs,
outputs, data types; `max_batch_size` and `dynamic_batching` where the batch is dynamic, dims then without it),
and KServe's InferenceService points a Triton predictor at the repository. Both speak the same
KServe v2 protocol as `edgekit serve`, so a client written against one works against the other.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from edgekit.core.artifact import Artifact, Manifest, TensorSpec
from edgekit.core.errors import UsageError
from edgekit.core.fsutil import atomic_write_bytes, atomic_write_text

TRITON_TYPES = {"bool": "TYPE_BOOL", "uint8": "TYPE_UINT8", "uint16": "TYPE_UINT16", "uint32": "TYPE_UINT32",
                "uint64": "TYPE_UINT64", "int8": "TYPE_INT8", "int16": "TYPE_INT16", "int32": "TYPE_INT32",
                "int64": "TYPE_INT64", "float16": "TYPE_FP16", "float32": "TYPE_FP32", "float64": "TYPE_FP64"}


@dataclass(frozen=True)
class TritonModel:
    name: str
    artifact: Artifact
    source: Path
    max_batch_size: int  # 0: the batch is static (or absent) and part of dims


def _name(stem: str, art: Artifact) -> str:
    """A repository folder name that is also a valid Kubernetes name part: lower case, digits and '-'. ONNX models
    are `<stem>-<precision>`; other formats name themselves (`<stem>-openvino-int8`)."""
    label = f"{stem}-{art.precision}" if art.format == "onnx" else f"{stem}-{art.format}-{art.precision}"
    return re.sub(r"[^a-z0-9-]+", "-", label.lower()).strip("-")


def _service_name(model: str) -> str:
    """The InferenceService's name: a model's folder name less its `-<format>-<precision>` tail."""
    from edgekit.core.formats import FORMATS
    from edgekit.core.precisions import PRECISIONS

    formats, precisions = "|".join(map(re.escape, FORMATS)), "|".join(map(re.escape, PRECISIONS))
    return re.sub(rf"-(({formats})-)?({precisions})$", "", model) or "edgekit"


def _backend(fmt: str) -> str | None:
    from edgekit.core.formats import FORMATS

    spec = FORMATS.get(fmt)
    return spec.triton_backend if spec is not None else None


def _dynamic_batch(art: Artifact) -> bool:
    specs = [*art.inputs, *art.outputs]
    return bool(specs) and all(len(s.shape) >= 1 and s.shape[0] <= 0 for s in specs)


def _tensor(spec: TensorSpec, batched: bool, indent: str) -> str:
    if spec.dtype not in TRITON_TYPES:
        raise UsageError(f"Tensor '{spec.name}' has dtype {spec.dtype}, which Triton's config cannot say.")
    dims = spec.shape[1:] if batched else spec.shape
    return (f'{indent}{{\n{indent}  name: "{spec.name}"\n{indent}  data_type: {TRITON_TYPES[spec.dtype]}\n'
            f"{indent}  dims: [ {', '.join(str(d if d > 0 else -1) for d in dims)} ]\n{indent}}}")


def config_pbtxt(model: TritonModel, instances: int = 1) -> str:
    """Triton's model configuration (protobuf text format) for one artifact."""
    art, batched = model.artifact, model.max_batch_size > 0
    lines = [f'name: "{model.name}"', f'backend: "{_backend(art.format)}"', f"max_batch_size: {model.max_batch_size}",
             "input [", ",\n".join(_tensor(s, batched, "  ") for s in art.inputs), "]",
             "output [", ",\n".join(_tensor(s, batched, "  ") for s in art.outputs), "]"]
    if batched:
        lines.append("dynamic_batching { }")
    lines.append(f"instance_group [ {{ kind: KIND_CPU count: {instances} }} ]")
    return "\n".join(lines) + "\n"


def inference_service(name: str, storage_uri: str) -> str:
    """A KServe v1beta1 InferenceService running Triton on the repository at STORAGE_URI (v2 protocol)."""
    return (f"apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: {name}\n"
            "spec:\n  predictor:\n    model:\n      modelFormat:\n        name: triton\n"
            f"      protocolVersion: v2\n      storageUri: {storage_uri}\n")


def plan_repository(path: Path, max_batch: int = 8) -> list[TritonModel]:
    """The artifacts of PATH Triton can serve (a conversion folder, its manifest.json, or one artifact file beside
    a manifest)."""
    from edgekit.measure.artifact import manifest_for

    p = Path(path)
    if p.is_file() and p.name != "manifest.json":
        found = manifest_for(p)
        if found is None:
            raise UsageError(f"{p} has no manifest.json beside it to read its inputs and outputs from.",
                             hint="Export the `edgekit convert` output folder.")
        manifest, arts, mf = found[0], [found[1]], p.parent / "manifest.json"
    else:
        manifest = Manifest.read(p)
        mf = p if p.name == "manifest.json" else p / "manifest.json"
        arts = [a for a in manifest.artifacts if a.ok and _backend(a.format)]
    if not arts or not all(_backend(a.format) for a in arts):
        raise UsageError(f"{p} holds no artifact Triton serves (ONNX or OpenVINO IR).",
                         hint="Convert with --target onnx (or openvino).")
    stem = Path(manifest.source.path).name.split(".")[0] if manifest.source.path else "model"
    return [TritonModel(_name(stem, a), a, manifest.resolve(a, mf),
                        max_batch if _dynamic_batch(a) else 0) for a in arts]


def write_repository(models: list[TritonModel], out: Path, storage_uri: str | None = None,
                     force: bool = False) -> list[Path]:
    """OUT/<name>/1/model.<suffix> (+ ONNX external data, an IR's model.bin), OUT/<name>/config.pbtxt,
    OUT/inferenceservice.yaml."""
    from edgekit.core.formats import companions
    out = Path(out)
    written: list[Path] = []
    for m in models:
        folder = out / m.name
        if folder.exists() and not force:
            raise UsageError(f"{folder} exists already.", hint="Pass --force to replace it, or choose another DIR.")
        version = folder / "1"
        version.mkdir(parents=True, exist_ok=True)
        written.append(atomic_write_bytes(version / f"model{m.source.suffix.lower()}", m.source.read_bytes()))
        for companion in companions(m.source):  # an IR's weights: model.bin beside model.xml, as Triton reads them
            written.append(atomic_write_bytes(version / f"model{companion.suffix}", companion.read_bytes()))
        data = m.source.with_name(m.source.name + ".data")
        if data.is_file():  # external weights keep the name the model refers to
            shutil.copyfile(data, version / data.name)
            written.append(version / data.name)
        written.append(atomic_write_text(folder / "config.pbtxt", config_pbtxt(m)))
    service = _service_name(models[0].name)
    uri = storage_uri or f"pvc://models/{out.name}"
    written.append(atomic_write_text(out / "inferenceservice.yaml", inference_service(service, uri)))
    return written


__all__ = ["TRITON_TYPES", "TritonModel", "config_pbtxt", "inference_service", "plan_repository",
           "write_repository"]
