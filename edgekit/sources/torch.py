"""PyTorch sources: ExportedProgram (.pt2), TorchScript, state_dict checkpoints, pickled modules.

Safety: a torch.save archive is read with `weights_only=True` first. Only if that refuses (the
file pickles classes, which runs code on load) and the user passed --trust-model is it loaded in
full. ExportedPrograms and TorchScript archives hold no Python pickles of user classes.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from edgekit.core._deps import require
from edgekit.core.batching import rows_per_chunk
from edgekit.core.border import vendor_errors, vendor_message
from edgekit.core.errors import UnsupportedModel, UsageError
from edgekit.core.fsutil import sha256_file
from edgekit.sources.base import LoadOptions, Source, SourceSpec
from edgekit.sources.detect import ZIP_MAGIC, zip_names
from edgekit.sources.factory import load_factory
from edgekit.sources.memory import fused_twin

if TYPE_CHECKING:
    from collections import Counter

_CHECKPOINT_KEYS = ("state_dict", "model_state_dict", "model", "net", "weights")


def _sym_shape(shape: Any) -> list[int]:
    return [int(d) if isinstance(d, int) or str(d).isdigit() else -1 for d in shape]


def _exported(path: Path) -> tuple[Any, Any, list[int], str]:
    torch = require("torch", purpose="load PyTorch models")
    with vendor_errors("torch", error=UnsupportedModel,
                       what=f"{path} could not be read as a torch.export ExportedProgram",
                       hint="Re-save it with torch.export.save(torch.export.export(model, args), path)."):
        ep = torch.export.load(str(path))
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    user_inputs = list(ep.graph_signature.user_inputs)
    nodes = [n for n in placeholders if n.name in user_inputs]
    if len(nodes) != 1:
        raise UnsupportedModel(f"{path} takes {len(nodes)} inputs; edgekit converts single-input models.",
                               hint="Wrap the model so that it takes one image tensor.")
    val = nodes[0].meta.get("val")
    shape = _sym_shape(val.shape) if val is not None else []
    dtype = str(val.dtype).replace("torch.", "") if val is not None else "float32"
    return ep, ep.module(), shape, dtype


def _state_dict_from(obj: Any) -> dict[str, Any] | None:
    torch = require("torch")
    if isinstance(obj, dict):
        if all(isinstance(v, torch.Tensor) for v in obj.values()):  # an empty one too: a net without weights
            return obj
        for key in _CHECKPOINT_KEYS:
            inner = obj.get(key)
            if isinstance(inner, dict) and inner and all(isinstance(v, torch.Tensor) for v in inner.values()):
                return inner
    return None


def _torch_zip(path: Path, opts: LoadOptions) -> tuple[Any, str]:
    """A torch.save archive: state_dict/checkpoint (+ --model factory) or a pickled module (--trust-model)."""
    torch = require("torch", purpose="load PyTorch models")
    unreadable = vendor_errors("torch", error=UnsupportedModel, what=f"{path} could not be read by torch.load",
                               hint="The file may be truncated or not a PyTorch file.")
    try:
        with unreadable:
            obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except UnsupportedModel as exc:
        # the weights-only unpickler refuses a pickled class with pickle.UnpicklingError; anything else is damage
        if not isinstance(exc.__cause__, pickle.UnpicklingError):
            raise
        if not opts.trust_model:
            raise UnsupportedModel(
                f"{path} is a fully pickled PyTorch module. Loading it runs arbitrary Python code from the file "
                "(pickle), so edgekit refuses it by default.",
                hint="Re-save it safely: torch.save(model.state_dict(), 'model.pt') and pass "
                "--model pkg.module:factory, "
                "or torch.export.save(torch.export.export(model, (example,)), 'model.pt2'). If you trust the file, "
                "pass --trust-model.",
            ) from exc
        with unreadable:
            obj = torch.load(str(path), map_location="cpu", weights_only=False)
        if isinstance(obj, torch.nn.Module):
            return obj.eval(), "torch-pickle"
        raise UnsupportedModel(f"{path} unpickled to a {type(obj).__name__}, not a torch.nn.Module.") from exc
    if isinstance(obj, torch.nn.Module):  # possible with allow-listed classes
        return obj.eval(), "torch-pickle"
    state = _state_dict_from(obj)
    if state is None:
        raise UnsupportedModel(
            f"{path} holds a {type(obj).__name__} that is neither a state_dict nor a checkpoint with one "
            f"(looked for keys {', '.join(_CHECKPOINT_KEYS)}).",
            hint="Save the weights with torch.save(model.state_dict(), path).",
        )
    if not opts.factory:
        raise UsageError(
            f"{path} is a state_dict checkpoint: it holds weights but not the network that uses them.",
            hint="Pass --model package.module:factory naming a function that builds the model, "
            "e.g. --model models.mnist_cnn:build.",
        )
    model = load_factory(opts.factory)()
    if not isinstance(model, torch.nn.Module):
        raise UsageError(f"--model {opts.factory} returned a {type(model).__name__}, not a torch.nn.Module.")
    with vendor_errors("torch", error=UsageError,
                       what=f"The weights in {path} do not fit the model built by {opts.factory}",
                       hint="Check that --model names the architecture these weights were trained with."):
        model.load_state_dict(state, strict=True)
    return model.eval(), "torch-state-dict"


def named_outputs(y: Any) -> dict[str, Any]:
    """A module's output by name: "output" for one tensor, a dict's keys, "output_<i>" for a tuple or list.

    The ONNX export is given the same names (torch_to_onnx), so every artifact's outputs are matched
    to these by name.
    """
    if isinstance(y, dict):
        return {str(k): v for k, v in y.items()}
    if isinstance(y, (tuple, list)):
        return {f"output_{i}": v for i, v in enumerate(y)} if len(y) > 1 else {"output": y[0]}
    return {"output": y}


def _make_predict_outputs(module: Any, max_batch: int) -> Any:
    torch = require("torch")

    def predict_outputs(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = next(iter(feeds.values()))
        step = max_batch or rows_per_chunk([x], 256)  # MAX_BATCH: the module's static batch, 0 when free
        outs: dict[str, list[np.ndarray]] = {}
        with torch.no_grad():
            for i in range(0, len(x), step):
                y = module(torch.from_numpy(np.ascontiguousarray(x[i:i + step], dtype=np.float32)))
                for name, t in named_outputs(y).items():
                    outs.setdefault(name, []).append(t.detach().cpu().numpy().astype(np.float32))
        return {name: np.concatenate(parts) for name, parts in outs.items()}

    return predict_outputs


def _make_predict(module: Any, max_batch: int) -> Any:
    run = _make_predict_outputs(module, max_batch)

    def predict(x: np.ndarray) -> np.ndarray:
        return next(iter(run({"input": x}).values()))

    return predict


def load(path: Path | None, opts: LoadOptions, kind: str) -> Source:
    """Load a PyTorch source of the detected KIND."""
    torch = require("torch", purpose="load PyTorch models")
    shape: list[int]
    if path is None:  # --model factory alone: the network with its initial weights
        model, kind, shape, dtype, obj = load_factory(opts.factory or "")(), "torch-factory", [], "float32", None
        if not isinstance(model, torch.nn.Module):
            raise UsageError(f"--model {opts.factory} returned a {type(model).__name__}, not a torch.nn.Module.")
        module = obj = model.eval()
    elif kind == "torch-exported":
        obj, module, shape, dtype = _exported(path)
    elif kind == "torchscript":
        with vendor_errors("torch", error=UnsupportedModel, what=f"{path} could not be read as TorchScript",
                           hint="The file may be truncated; re-save it with torch.jit.save."):
            obj = module = torch.jit.load(str(path), map_location="cpu").eval()
        shape, dtype = [], "float32"
    else:
        obj, kind = _torch_zip(path, opts)
        module, shape, dtype = obj, [], "float32"

    if opts.input_shape:
        if shape and not _fits(opts.input_shape, shape):
            raise UsageError(f"--input-shape {_fmt(opts.input_shape)} does not fit the model, which takes "
                             f"{_fmt(shape)}.",
                             hint="Leave --input-shape out for .pt2 files: their shape is recorded in the file.")
        shape = list(opts.input_shape)
    if not shape:
        raise UsageError(
            f"The input shape of {path or opts.factory} is not recorded in the file ({kind}).",
            hint="Pass --input-shape N,C,H,W (batch first, NCHW for PyTorch), e.g. --input-shape 1,1,28,28.",
        )
    static_batch = shape[0] if shape[0] > 0 else 0
    reference, changes = module, []  # the model every artifact is validated against: the source as given
    if opts.reparameterize:
        twin = fused_twin(path) if path is not None and kind == "torch-exported" else None
        if twin is not None:  # edgekit.convert(module, reparameterize=True) fused the module before exporting both
            fused_path, calls = twin
            obj, fused_module, _, _ = _exported(fused_path)
            changes = [_said(module, fused_module, calls, shape, static_batch)]
            module = fused_module
        elif kind in ("torch-exported", "torchscript"):
            from edgekit.sources.torch_reparam import refuse_without_module

            raise refuse_without_module(kind)
        else:
            from edgekit.sources.torch_reparam import fused_copy

            fused, calls = fused_copy(module)
            changes = [_said(module, fused, calls, shape, static_batch)]
            obj = module = fused
    predict = _make_predict(reference, static_batch or 0)
    probe = np.zeros([1 if d <= 0 else d for d in shape], dtype=np.float32)
    with vendor_errors("torch", error=UsageError, describe=lambda exc: vendor_message(exc, 300, last=True),
                       what=f"The model does not accept an input of shape {_fmt(probe.shape)}",
                       hint="Pass the shape the model was trained on with --input-shape N,C,H,W."):
        names = list(_make_predict_outputs(reference, static_batch or 0)({"input": probe}))
    if static_batch == 0 and kind != "torch-exported":
        shape = [-1, *shape[1:]]  # eager modules accept any batch
    return Source(
        path=path or Path(opts.factory or "factory"),
        kind=kind,
        family="torch",
        layout="NCHW" if len(shape) == 4 else "NC",
        input_name="input",
        input_shape=shape,
        input_dtype=dtype,
        predict=predict,
        model=obj,
        sha256=sha256_file(path) if path else "",
        extra={"module": module},
        output_names=names,
        predict_outputs=_make_predict_outputs(reference, static_batch or 0),
        changes=changes,
    )


def _said(module: Any, fused: Any, calls: Counter[str], shape: list[int], static_batch: int) -> str:
    """The manifest's words for the fusion, with how far FUSED's outputs are from MODULE's on a seeded random input
    (a fusion that changes the function shows)."""
    from edgekit.sources.torch_reparam import words

    x = np.random.default_rng(0).standard_normal([d if d > 0 else 2 for d in shape]).astype(np.float32)
    want = _make_predict_outputs(module, static_batch)({"input": x})
    got = _make_predict_outputs(fused, static_batch)({"input": x})
    rel = max(float(np.abs(got[k] - v).max() / (np.ptp(v) or 1.0)) for k, v in want.items())
    return words(calls, rel)


def _fits(given: list[int], model: list[int]) -> bool:
    return len(given) == len(model) and all(m <= 0 or g == m for g, m in zip(given, model, strict=True))


def _fmt(shape: Any) -> str:
    return "x".join(str(d) if d > 0 else "?" for d in shape)


def sniff(path: Path, head: bytes) -> str | None:
    """torch-exported, torchscript or torch-zip by the zip archive's layout; torch-legacy for a raw pickle."""
    if head.startswith(ZIP_MAGIC):
        names = zip_names(path)
        base = {n.split("/", 1)[-1] for n in names}
        if any(n.endswith("serialized_exported_program.json") or n.endswith("models/model.json")
               or n.endswith(".json") and "/models/" in n for n in names) or "archive_format" in base:
            return "torch-exported"
        if any("/code/" in n for n in names) or "constants.pkl" in base:
            return "torchscript"
        return "torch-zip" if "data.pkl" in base else None
    if head[:2] == b"\x80\x02" or head[:1] == b"\x80" and path.suffix in (".pt", ".pth", ".bin"):
        return "torch-legacy"  # torch.save(..., _use_new_zipfile_serialization=False): a raw pickle
    return None


SOURCE = SourceSpec(
    name="torch", family="torch", kinds=("torch-exported", "torchscript", "torch-zip", "torch-legacy", "torch-factory"),
    sniff=sniff, load=load, files=".pt2 (torch.export.save), TorchScript .pt, torch.save state_dict",
    dists=("torch",),
)
