"""The ncnn .param text: read it as hostile input, name its blobs, give its inputs their shapes.

The format (ncnn's `Net::load_param`): a first line `7767517` (the magic), a second line `<layers> <blobs>`,
then one line per layer: `Type name n_in n_out in_blob... out_blob... id=value ...`, where a value is an int,
a float (a '.' or an exponent in it), or an array `-233xx=n,v1,...,vn` for parameter id xx. Blob names are
tokens of at most 255 bytes (ncnn scans them with "%255s"). Everything is bounded here (file size, counts, token
lengths, parameter ids) and anything else is an UnsupportedModel naming the line, never a traceback.

pnnx names a model's blobs in0, in1 ... and out0, out1 ... in the order of the model's inputs and outputs; the
ncnn target renames them after the source's tensors (`rename`) and writes each Input layer's shape
(`0=w 1=h 11=d 2=c`, ncnn's own Input parameters), so the artifact itself says what it takes and gives.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from edgekit.core.errors import UnsupportedModel

MAGIC = "7767517"
MAX_BYTES = 64 * 1024 * 1024  # a .param is text with one short line per layer: MobileNetV2's is 12 KB
MAX_LAYERS = 200_000
MAX_BLOBS = 400_000
MAX_TOKEN = 255  # ncnn reads names with "%255s"
MAX_PARAM_ID = 31  # NCNN_MAX_PARAM_COUNT is 32
MAX_ARRAY = 1 << 20
ARRAY_BASE = -23300  # `-23300 - id = n,v...`: the array form of parameter ID
SAFE_NAME = re.compile(r"^[A-Za-z0-9_.:/\-\[\]]{1,255}$")  # a name that is one token, as ncnn scans it
# the Input layer's parameter ids for each dimension, innermost first: w, h, d, c
_INPUT_DIMS = {0: "w", 1: "h", 11: "d", 2: "c"}

Value = int | float | str | list[int | float]


@dataclass
class Layer:
    type: str
    name: str
    bottoms: list[str]
    tops: list[str]
    params: dict[int, Value] = field(default_factory=dict)
    line: int = 0  # 1-based line of the file

    def int_param(self, key: int, default: int = 0) -> int:
        v = self.params.get(key, default)
        return int(v) if isinstance(v, (int, float)) else default

    def float_param(self, key: int, default: float = 0.0) -> float:
        v = self.params.get(key, default)
        return float(v) if isinstance(v, (int, float)) else default

    def array_param(self, key: int) -> list[int | float]:
        v = self.params.get(key)
        return list(v) if isinstance(v, list) else []


@dataclass
class Param:
    """A parsed .param: its layers in file order and the declared counts."""

    layers: list[Layer]
    blob_count: int

    @property
    def inputs(self) -> list[Layer]:
        return [layer for layer in self.layers if layer.type == "Input"]

    def input_names(self) -> list[str]:
        return [top for layer in self.inputs for top in layer.tops]

    def output_names(self) -> list[str]:
        """Blobs that no layer consumes, in the order they are produced (ncnn's own outputs)."""
        consumed = {b for layer in self.layers for b in layer.bottoms}
        return [t for layer in self.layers if layer.type != "Input" for t in layer.tops if t not in consumed]

    def input_shape(self, layer: Layer) -> list[int] | None:
        """The Input layer's shape with a leading batch of 1, outermost first ([1, c, h, w]); None where the
        layer gives none."""
        dims = {k: layer.int_param(k) for k in _INPUT_DIMS if layer.int_param(k) > 0}
        if not dims:
            return None
        order = [k for k in (2, 11, 1, 0) if k in dims]  # c, d, h, w: outermost first
        return [1, *(dims[k] for k in order)]


def unknown_layers(param: Param, known: Callable[[str], bool]) -> dict[str, list[str]]:
    """Layer type -> the names of PARAM's layers of a type KNOWN (ncnn's own `layer_to_index(t) >= 0`) says ncnn
    has no layer for: what pnnx left unconverted (it writes the ONNX op as it is)."""
    out: dict[str, list[str]] = {}
    for layer in param.layers:
        if not known(layer.type):
            out.setdefault(layer.type, []).append(layer.name)
    return out


def is_ncnn_param(path: str | Path) -> bool:
    """True when PATH starts like an ncnn .param text (the magic 7767517 alone on its first line)."""
    from edgekit.core.sniff import read_head

    head = read_head(path, 32)
    first = head.split(b"\n", 1)[0].strip()
    return first == MAGIC.encode()


def _bad(path: str | Path, line: int, why: str) -> UnsupportedModel:
    where = f"line {line} of {Path(path).name}" if line else Path(path).name
    return UnsupportedModel(f"{where} is not a valid ncnn .param: {why}.",
                            hint="Re-create it with `edgekit convert ... --target ncnn` (pnnx); a .param is only "
                                 "read as ncnn's text form (first line 7767517).")


def _number(token: str) -> int | float:
    if any(c in token for c in ".eE") and not token.lstrip("+-").isdigit():
        return float(token)
    return int(token)


def _value(path: str | Path, line: int, key: int, raw: str) -> tuple[int, Value]:
    try:
        if key <= ARRAY_BASE:
            pid = ARRAY_BASE - key
            parts = raw.split(",")
            n = int(parts[0])
            if not 0 <= n <= MAX_ARRAY or len(parts) != n + 1:
                raise _bad(path, line, f"array parameter {pid} declares {parts[0]} values and has {len(parts) - 1}")
            values: list[int | float] = [_number(p) for p in parts[1:]]
            out: tuple[int, Value] = (pid, values)
        elif raw.startswith('"'):
            out = (key, raw.strip('"'))
        else:
            out = (key, _number(raw))
    except ValueError:
        raise _bad(path, line, f"parameter {key} has the value {raw[:40]!r}, not a number") from None
    if not 0 <= out[0] <= MAX_PARAM_ID:
        raise _bad(path, line, f"parameter id {key} is out of ncnn's range")
    return out


def parse_text(text: str, path: str | Path = "model.ncnn.param") -> Param:
    """The layers of .param TEXT (PATH names it in errors); UnsupportedModel for anything malformed."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != MAGIC:
        raise _bad(path, 1, f"the first line is not the magic {MAGIC}")
    if len(lines) < 2:
        raise _bad(path, 2, "the layer and blob counts are missing")
    counts = lines[1].split()
    if len(counts) != 2 or not all(c.isdigit() for c in counts):
        raise _bad(path, 2, "the second line must be '<layer count> <blob count>'")
    n_layers, n_blobs = int(counts[0]), int(counts[1])
    if n_layers > MAX_LAYERS or n_blobs > MAX_BLOBS:
        raise _bad(path, 2, f"{n_layers} layers / {n_blobs} blobs is more than edgekit reads "
                            f"({MAX_LAYERS} / {MAX_BLOBS})")
    layers: list[Layer] = []
    for i, raw in enumerate(lines[2:], start=3):
        tokens = raw.split()
        if not tokens:
            continue
        if len(layers) == n_layers:
            raise _bad(path, i, f"more layers than the {n_layers} declared")
        if len(tokens) < 4 or not tokens[2].isdigit() or not tokens[3].isdigit():
            raise _bad(path, i, "a layer line is 'Type name n_in n_out blobs... params...'")
        n_in, n_out = int(tokens[2]), int(tokens[3])
        if 4 + n_in + n_out > len(tokens) or n_in + n_out > MAX_BLOBS:
            raise _bad(path, i, f"the layer declares {n_in} inputs and {n_out} outputs but names fewer blobs")
        if any(len(t) > MAX_TOKEN for t in tokens[:4 + n_in + n_out]):
            raise _bad(path, i, f"a name is longer than {MAX_TOKEN} characters")
        params: dict[int, Value] = {}
        for tok in tokens[4 + n_in + n_out:]:
            key, sep, val = tok.partition("=")
            if not sep or not key.lstrip("-").isdigit() or len(key) > 8:
                raise _bad(path, i, f"{tok[:40]!r} is not an id=value parameter")
            pid, value = _value(path, i, int(key), val)
            params[pid] = value
        layers.append(Layer(tokens[0], tokens[1], tokens[4:4 + n_in], tokens[4 + n_in:4 + n_in + n_out], params, i))
    if len(layers) != n_layers:
        raise _bad(path, 0, f"{len(layers)} layers where {n_layers} are declared (a truncated file?)")
    return Param(layers, n_blobs)


def read_param(path: str | Path) -> Param:
    """The parsed .param at PATH; UnsupportedModel where it is too big, not text, or malformed."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise _bad(p, 0, f"it is {size} bytes, more than the {MAX_BYTES} edgekit reads as a .param")
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(p, 0, "it is not text (a binary .param.bin is not read)") from None
    except OSError as exc:
        raise UnsupportedModel(f"{p} could not be read: {exc.strerror or exc}.", hint="Check the path.") from None
    return parse_text(text, p)


def rename(text: str, names: dict[str, str], input_shapes: dict[str, list[int]] | None = None,
           path: str | Path = "model.ncnn.param") -> str:
    """.param TEXT with blobs renamed by NAMES (old -> new) and, for each Input layer whose blob is a key of
    INPUT_SHAPES (new names, [1, c, h, w] outermost first with the batch), its shape written as ncnn's Input
    parameters. UnsupportedModel where a new name is not one ncnn token or would collide with another blob."""
    param = parse_text(text, path)
    blobs = {b for layer in param.layers for b in (*layer.bottoms, *layer.tops)}
    for old, new in names.items():
        if not SAFE_NAME.match(new):
            raise UnsupportedModel(f"The tensor name {new!r} cannot be an ncnn blob name (one token of letters, "
                                   "digits and _ . : / - [ ], at most 255).",
                                   hint="Rename the model's input or output (e.g. torch.onnx.export input_names).")
        if new != old and new in blobs and new not in names:
            raise UnsupportedModel(f"The tensor name {new!r} is already the name of another blob of the ncnn model.",
                                   hint="Rename the model's input or output.")
    shapes = input_shapes or {}
    out = text.splitlines()[:2]
    for layer in param.layers:
        bottoms = [names.get(b, b) for b in layer.bottoms]
        tops = [names.get(t, t) for t in layer.tops]
        raw = text.splitlines()[layer.line - 1].split()
        params = raw[4 + len(bottoms) + len(tops):]
        if layer.type == "Input" and tops and tops[0] in shapes:
            params = _input_params(params, shapes[tops[0]], path)
        out.append(" ".join([layer.type, layer.name, str(len(bottoms)), str(len(tops)), *bottoms, *tops, *params]))
    return "\n".join(out) + "\n"


def _input_params(params: list[str], shape: list[int], path: str | Path) -> list[str]:
    """PARAMS with the Input shape SHAPE ([1, ...] with the batch) as 0=w 1=h 11=d 2=c."""
    dims = list(shape[1:]) if len(shape) > 1 else list(shape)
    if not 1 <= len(dims) <= 4 or any(d <= 0 for d in dims):
        raise UnsupportedModel(f"An ncnn input takes 1 to 4 static dimensions after the batch; {shape} in "
                               f"{Path(path).name} is not one.", hint="Convert with a static input shape.")
    keys = {1: (0,), 2: (1, 0), 3: (2, 1, 0), 4: (2, 11, 1, 0)}[len(dims)]  # outermost first
    kept = [p for p in params if p.partition("=")[0] not in {"0", "1", "11", "2"}]
    return [*(f"{k}={d}" for k, d in zip(keys, dims, strict=True)), *kept]


__all__ = ["MAGIC", "Layer", "Param", "is_ncnn_param", "parse_text", "read_param", "rename", "unknown_layers"]
