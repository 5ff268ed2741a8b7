"""Which artifact output is which source output: by name, by signature key, and only then by shape and values.

Converters rename and reorder outputs: the TFLite converter returns a two-output model's tensors as
"PartitionedCall:1", "PartitionedCall:0" (in another order than the source's), and onnx2tf names its
SavedModel signature outputs "output_0", "output_1" after the ONNX graph's output order. Matching by
position would compare a box head with a score head. The rules, in order, each only among outputs
not matched yet:

1. "name": the artifact tensor has the source output's name (exactly, or once both are normalised:
   case, punctuation, a "serving_default_" prefix and a ":0" suffix ignored);
2. "signature": the artifact's signature key for the tensor is the source output's name, or is
   onnx2tf's positional "output_<i>" for the source's i-th output (kept only when the shapes agree);
3. "shape": the one remaining artifact output with the source output's shape;
4. "values": several remaining outputs share the shape (names lost): the pairs with the smallest
   relative error are taken first.
A source output left without a partner is reported as such, never compared with a wrong one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgekit.fidelity.metrics import relative_error
from edgekit.fidelity.names import normalized

_POSITIONAL = re.compile(r"^output_(\d+)$")


@dataclass(frozen=True)
class Match:
    """The artifact output found for a source output (None when there is none), and how it was found."""

    source: str
    artifact: str | None
    by: str | None


def match_outputs(source: dict[str, np.ndarray], artifact: dict[str, np.ndarray],
                  signature: dict[str, str] | None = None, source_order: Sequence[str] | None = None) -> list[Match]:
    """A Match per source output (in SOURCE's order). SIGNATURE: artifact tensor name -> signature key."""
    order = list(source_order or source)
    left = dict(artifact)  # artifact outputs not matched yet
    found: dict[str, Match] = {}

    def take(src: str, art: str, by: str) -> None:
        found[src] = Match(src, art, by)
        left.pop(art)

    for src in source:  # 1. names
        exact = src if src in left else None
        same = [a for a in left if normalized(a) == normalized(src)]
        if exact or len(same) == 1:
            take(src, exact or same[0], "name")
    keys = {art: key for art, key in (signature or {}).items()}
    for src in [s for s in source if s not in found]:  # 2. signature keys
        for art in list(left):
            key = keys.get(art)
            if key is None:
                continue
            pos = _POSITIONAL.match(key)
            by_key = normalized(key) == normalized(src)
            by_pos = pos is not None and int(pos.group(1)) < len(order) and order[int(pos.group(1))] == src
            if (by_key or by_pos) and (by_key and not pos or left[art].shape == source[src].shape):
                take(src, art, "signature")
                break
    for src in [s for s in source if s not in found]:  # 3. the only one of that shape
        shape = source[src].shape
        rivals = [s for s in source if s not in found and source[s].shape == shape]
        cands = [a for a in left if left[a].shape == shape]
        if len(cands) == 1 and len(rivals) == 1:
            take(src, cands[0], "shape")
    pairs = sorted((relative_error(source[s], left[a]), s, a) for s in source if s not in found for a in left
                   if left[a].shape == source[s].shape)
    for _, src, art in pairs:  # 4. values, closest first
        if src not in found and art in left:
            take(src, art, "values")
    return [found.get(s, Match(s, None, None)) for s in source]


def signature_outputs(path: str) -> dict[str, str]:
    """Tensor name -> signature output key of a .tflite (its first signature); {} where it has none."""
    from edgekit.tflite.interpreter import interpreter_class

    interp = interpreter_class()(model_path=str(path))
    sigs = interp._get_full_signature_list() or {}
    if not sigs:
        return {}
    sig = sigs.get("serving_default") or next(iter(sigs.values()))
    names = {d["index"]: d["name"] for d in interp.get_tensor_details()}
    return {names[idx]: key for key, idx in (sig.get("outputs") or {}).items() if idx in names}


__all__ = ["Match", "match_outputs", "normalized", "signature_outputs"]
