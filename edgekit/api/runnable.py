"""An artifact loaded in its runtime and called like a function: numpy arrays in, outputs by name out.

`edgekit.load(path)` and `artifact.load()` return a `LoadedModel`. It does what `edgekit serve` does for
a request, in the caller's process:
- inputs by the source model's names (edgekit.serve.names: whichever artifact of a conversion is loaded,
  the names are the source's), by the artifact's own tensor names, or positionally in the model's order;
- a quantized input is given as float and quantized with the model's own scale and zero point (its raw
  integer dtype is taken as it is); quantized outputs come back dequantized to float32;
- a float input given as float64 is cast to the model's float type; no other silent cast (an int array for a
  float input, NaN or infinity for a quantized one: UsageError, as serve answers 400).
Two conveniences for comparing an artifact with the model it came from, as validation does:
- with the conversion's manifest, a 4-D image input is taken in the source's layout (NCHW for a PyTorch
  source) and transposed to the artifact's (a TFLite artifact's NHWC); `layout="artifact"` takes the
  artifact's own layout instead;
- a batch larger than a static batch (TFLite artifacts have batch 1) runs in chunks of that batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from edgekit.core.errors import UsageError

if TYPE_CHECKING:
    from edgekit.core.artifact import Artifact, SourceInfo
    from edgekit.runtimes.base import Runtime

Layout = Literal["source", "artifact"]


@dataclass(frozen=True)
class Tensor:
    """One input or output as a caller sees it: its name, shape in the caller's layout (-1: any), dtype, and
    whether it is quantized in the model (given and returned as float)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    layout: str | None
    quantized: bool
    own_name: str  # the artifact's tensor name (accepted too)


def _transposed(shape: list[int], src: str | None, dst: str | None) -> list[int]:
    if len(shape) != 4 or not src or not dst or src == dst:
        return list(shape)
    order = {("NCHW", "NHWC"): (0, 2, 3, 1), ("NHWC", "NCHW"): (0, 3, 1, 2)}.get((src, dst))
    return [shape[i] for i in order] if order else list(shape)


class LoadedModel:
    """An artifact loaded on a device, called as `model(x)` or `model(input=x)`: {output name: array}.

    Inputs go positionally or by name: the source model's names where the conversion's manifest is known,
    the artifact's own tensor names too. A quantized input takes float (quantized with the model's scale and
    zero point) or its raw integer dtype; quantized outputs come back as float32. With the manifest, a 4-D
    input is taken in the source's layout and image-shaped outputs are returned in it (`layout="artifact"`
    at load: the artifact's own). A batch larger than a static batch runs in chunks of it. `inputs` and
    `outputs` list the Tensors as the caller sees them; `close()` (or a `with` block) releases the runtime.
    """

    def __init__(self, path: str | Path, *, device: str = "cpu", runtime: str | None = None,
                 threads: int | None = None, artifact: Artifact | None = None, source: SourceInfo | None = None,
                 layout: Layout = "source", options: dict[str, Any] | None = None) -> None:
        from edgekit.core.console import captured_output
        from edgekit.core.registry import check_choice
        from edgekit.measure.profile import first_run_isolated
        from edgekit.runtimes import detect_format, pick_runtime, resolve_device
        from edgekit.serve.names import aliases, renaming

        check_choice(layout, ("source", "artifact"), "layout")
        self.path = Path(path)
        fmt = detect_format(self.path)
        cls = pick_runtime(fmt, runtime)
        dev = resolve_device(cls, fmt, device)
        # LiteRT can abort natively on a badly quantized model: its first run happens in a child (as serve does)
        opts, self.note = first_run_isolated(self.path, cls, dev, threads, 1, dict(options or {}))
        rt = cls()
        with captured_output():  # LiteRT announces its delegate on every load: noise in a notebook's cell
            rt.load(self.path, device=dev, threads=threads, **opts)
        self._rt: Runtime | None = rt
        self.format, self.device, self.runtime = fmt, dev, cls.name
        names = renaming(artifact, source, [s.name for s in rt.inputs], [s.name for s in rt.outputs])
        recorded = {s.name: s.layout for s in (artifact.inputs if artifact else [])}
        want = source.layout if layout == "source" and source is not None and source.layout else None
        self._layouts = {s.name: (want, recorded.get(s.name) or s.layout) for s in rt.inputs}
        self.inputs = [self._tensor(s, names.inputs[s.name], *self._layouts[s.name]) for s in rt.inputs]
        self.outputs = [self._tensor(s, names.outputs[s.name], None, None) for s in rt.outputs]
        # image-shaped outputs go back from the artifact's layout to the source's, as validation compares them
        own = next((o for w, o in self._layouts.values() if w and o and w != o), None)
        self._out_layouts: tuple[str, str] | None = (own, want) if own and want else None  # own is set only with want
        self._by_name: dict[str, str] = {}
        for t in self.inputs:
            for alias in (t.name, t.own_name, *aliases(t.own_name, t.name)):
                self._by_name.setdefault(alias, t.own_name)
        self._served_out = names.outputs

    @staticmethod
    def _tensor(spec: Any, served: str, want: str | None, own_layout: str | None) -> Tensor:
        quantized = spec.quantization is not None and np.dtype(spec.dtype).kind in "iu"
        shape = _transposed(list(spec.shape), own_layout, want)
        return Tensor(name=served, shape=tuple(int(d) if d > 0 else -1 for d in shape), dtype=spec.dtype,
                      layout=want or own_layout, quantized=quantized, own_name=spec.name)

    # ------------------------------------------------------------------ calling
    def _feeds(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, np.ndarray]:
        """Arrays by the runtime's own input names, from positional and named arguments."""
        if len(args) > len(self.inputs):
            raise UsageError(f"{len(args)} inputs given; the model takes {len(self.inputs)}: "
                             f"{[t.name for t in self.inputs]}.")
        feeds = {t.own_name: np.asarray(a) for t, a in zip(self.inputs, args, strict=False)}
        for key, value in kwargs.items():
            own = self._by_name.get(key)
            if own is None:
                raise UsageError(f"The model has no input '{key}'.",
                                 hint=f"Its inputs: {', '.join(t.name for t in self.inputs)} (or positionally).")
            if own in feeds:
                raise UsageError(f"Input '{key}' is given twice (by position and by name).")
            feeds[own] = np.asarray(value)
        missing = [t.name for t in self.inputs if t.own_name not in feeds]
        if missing:
            raise UsageError(f"Missing input(s) {missing}; the model takes {[t.name for t in self.inputs]}.")
        return feeds

    def _prepared(self, t: Tensor, x: np.ndarray) -> np.ndarray:
        from edgekit.core.layout import to_layout

        if x.ndim != len(t.shape) or any(w > 0 and g != w for i, (g, w) in enumerate(zip(x.shape, t.shape,
                                                                                        strict=True)) if i > 0):
            where = f" ({t.layout})" if t.layout else ""
            raise UsageError(f"Input '{t.name}' takes shape {list(t.shape)}{where} (-1: any), got {list(x.shape)}.",
                             hint="Pass a batch in that shape; layout='artifact' at load takes the artifact's own "
                             "layout instead of the source's." if t.layout and len(t.shape) == 4 else None)
        want, own = self._layouts[t.own_name]
        return to_layout(x, want, own) if want and own and want != own and x.ndim == 4 else x

    @staticmethod
    def _cast(t: Tensor, x: np.ndarray, spec: Any) -> np.ndarray:
        """X in the model's dtype: as it is, quantized (finite floats for a quantized input), or a float cast;
        UsageError for anything else (an int array for a float input, NaN for a quantized one), as serve refuses."""
        from edgekit.runtimes.base import quantize

        dt = np.dtype(spec.dtype)
        if x.dtype == dt:
            return x
        if x.dtype.kind == "f" and (t.quantized or dt.kind == "f"):
            if t.quantized and not np.isfinite(x).all():
                raise UsageError(f"Input '{t.name}' holds NaN or infinite values; the model quantizes it "
                                 f"({spec.dtype}) and they have no quantized value.")
            return quantize(x, spec)
        takes = f"float (quantized to {dt.name}) or {dt.name}" if t.quantized else dt.name
        raise UsageError(f"Input '{t.name}' takes {takes}, got {x.dtype.name}.",
                         hint=f"Convert it first, e.g. x.astype(np.{'float32' if t.quantized else dt.name}).")

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """Run on numpy arrays (positionally, or by input name); every output by name, float32 where quantized."""
        from edgekit.core.layout import to_layout
        from edgekit.runtimes.base import dequantize

        rt = self._runtime()
        feeds = self._feeds(args, kwargs)
        specs = {s.name: s for s in rt.inputs}
        xs = {t.own_name: self._cast(t, self._prepared(t, feeds[t.own_name]), specs[t.own_name]) for t in self.inputs}
        total = min((len(v) for v in xs.values() if v.ndim), default=1)
        if total < 1:
            raise UsageError("The inputs hold no sample (a batch of 0).")
        first = rt.inputs[0].shape if rt.inputs else []
        step = first[0] if first and first[0] > 0 else total  # a static batch runs in chunks of it
        parts: dict[str, list[np.ndarray]] = {}
        out_specs = {s.name: s for s in rt.outputs}
        for i in range(0, total, step):
            chunk = {k: v[i:i + step] for k, v in xs.items()}
            n = min(step, total - i)
            if n < step:  # pad the last chunk up to the static batch; the padding's outputs are dropped
                chunk = {k: np.concatenate([v, np.repeat(v[-1:], step - n, axis=0)]) for k, v in chunk.items()}
            for name, y in rt.run(chunk).items():
                parts.setdefault(name, []).append(dequantize(y, out_specs.get(name))[:n])
        out = {}
        for name, ys in parts.items():
            y = np.concatenate(ys) if len(ys) > 1 else ys[0]
            if y.ndim == 4 and self._out_layouts:
                y = to_layout(y, *self._out_layouts)
            out[self._served_out.get(name, name)] = y
        return out

    def _runtime(self) -> Runtime:
        if self._rt is None:
            raise UsageError(f"{self.path.name} was closed.", hint="Load it again: artifact.load().")
        return self._rt

    def close(self) -> None:
        """Release the runtime (also done on leaving a `with` block)."""
        if self._rt is not None:
            self._rt.close()
            self._rt = None

    def __enter__(self) -> LoadedModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {list(t.shape)} {'float32 (quantized)' if t.quantized else t.dtype}"
                        for t in self.inputs)
        outs = ", ".join(t.name for t in self.outputs)
        return f"<LoadedModel {self.path.name} on {self.runtime}/{self.device}: ({ins}) -> ({outs})>"


__all__ = ["Layout", "LoadedModel", "Tensor"]
