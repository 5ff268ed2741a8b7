"""weightpack: a library edgekit has never heard of, for the proof that a new format is its own files plus one
format record and one target record (tests/pipeline/test_new_format.py).

A `.wpk` file is a zip: `graph.onnx` (an ONNX graph whose weights were taken out), `weights.npz` (the weights:
float32, or int8 per output channel with a float32 scale each) and `pack.json` (the magic, the version, the
bits). `pack()` writes one from an ONNX file, quantizing the weights when asked; `Session` unpacks, dequantizes
and runs it (with onnxruntime underneath: what a library runs on is its own business). It raises `PackError` on a
file it cannot read, as a real library raises its own exception type.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

__version__ = "0.3"
MAGIC = "weightpack"


class PackError(Exception):
    """A .wpk file weightpack cannot read."""


def pack(onnx_path: str | Path, out: str | Path, bits: int = 32) -> None:
    """Write ONNX_PATH as a .wpk at OUT, with its float weights of rank >= 2 as int8 per channel where BITS is 8."""
    import onnx
    from onnx import numpy_helper

    if bits not in (8, 32):
        raise PackError(f"bits must be 8 or 32, not {bits}")
    model = onnx.load(str(onnx_path))
    arrays: dict[str, np.ndarray] = {}
    for init in list(model.graph.initializer):
        w = numpy_helper.to_array(init)
        if bits == 8 and w.dtype == np.float32 and w.ndim >= 2:
            scale = np.abs(w.reshape(w.shape[0], -1)).max(axis=1).astype(np.float32) / 127.0
            scale[scale == 0] = 1.0
            q = np.clip(np.round(w / scale.reshape(-1, *([1] * (w.ndim - 1)))), -127, 127).astype(np.int8)
            arrays[f"{init.name}::q"], arrays[f"{init.name}::s"] = q, scale
        else:
            arrays[init.name] = w
    del model.graph.initializer[:]
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("pack.json", json.dumps({"magic": MAGIC, "version": __version__, "bits": bits}))
        z.writestr("graph.onnx", model.SerializeToString())
        z.writestr("weights.npz", buf.getvalue())


def is_pack(path: str | Path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return bool(json.loads(z.read("pack.json")).get("magic") == MAGIC)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return False


class Session:
    """An unpacked .wpk, ready to run: `inputs` / `outputs` are (name, shape, dtype) triples."""

    def __init__(self, path: str | Path, threads: int | None = None) -> None:
        import onnx
        import onnxruntime as ort
        from onnx import numpy_helper

        try:
            with zipfile.ZipFile(path) as z:
                meta = json.loads(z.read("pack.json"))
                graph = z.read("graph.onnx")
                weights = np.load(io.BytesIO(z.read("weights.npz")), allow_pickle=False)
                arrays = {k: weights[k] for k in weights.files}
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise PackError(f"{path} is not a readable weight pack: {exc}") from exc
        if meta.get("magic") != MAGIC:
            raise PackError(f"{path} is not a weight pack (magic {meta.get('magic')!r})")
        self.bits = int(meta.get("bits", 32))
        model = onnx.load_from_string(graph)
        for key, value in arrays.items():
            if key.endswith("::s"):
                continue
            if key.endswith("::q"):
                name = key[:-3]
                scale = arrays[f"{name}::s"]
                value = value.astype(np.float32) * scale.reshape(-1, *([1] * (value.ndim - 1)))
            else:
                name = key
            model.graph.initializer.append(numpy_helper.from_array(value, name))
        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = threads
        try:
            self._session = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own failure: this library's error, as its users see it
            raise PackError(f"{path}: the packed graph does not load ({exc})") from exc
        self.inputs = [(i.name, list(i.shape), "float32") for i in self._session.get_inputs()]
        self.outputs = [(o.name, list(o.shape), "float32") for o in self._session.get_outputs()]

    def run(self, feeds: dict[str, Any]) -> dict[str, np.ndarray]:
        names = [name for name, _, _ in self.outputs]
        return dict(zip(names, self._session.run(names, feeds), strict=True))
