"""The names a served model's tensors answer to: the source's, whichever artifact of the conversion is served.

Converters rename tensors: the int8 TFLite of a model whose ONNX says `x` and `output` says
`serving_default_x:0` and `PartitionedCall:0`. A client written against one artifact would break on the
other (and on Triton serving the ONNX), so a model served with its manifest advertises the source's names,
which every artifact of the conversion shares, and takes its own tensor names (and a TF signature key such
as `x` inside `serving_default_x:0`) as aliases in requests. The pairing is validation's, so the names
served are the ones the artifact was judged by:

- outputs: each artifact output's fidelity record (`fidelity.outputs[i]`: `name` is the source's,
  `artifact_name` the tensor), else the same name once normalised, else the only source output for the
  only artifact output;
- inputs (validate.py `_feed_for`): the same name, else the one source input whose normalised name is the
  same, else the only source input for the only artifact input.

A tensor nothing pairs keeps its own name; names that would clash are not renamed at all (an
ambiguous name is worse than a converter's).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from edgekit.core.artifact import Artifact, SourceInfo
from edgekit.fidelity.names import normalized

_SIGNATURE = re.compile(r"^serving_default_(.+?)(?::\d+)?$")


@dataclass(frozen=True)
class Renaming:
    """Artifact tensor name -> served name, for inputs and for outputs."""

    inputs: dict[str, str]
    outputs: dict[str, str]


def _pair(own: str, names: Sequence[str], count: int) -> str | None:
    if own in names:
        return own
    same = [n for n in names if normalized(n) == normalized(own)]
    if len(same) == 1:
        return same[0]
    if len(names) == 1 and count == 1:
        return names[0]
    return None


def _injective(mapping: dict[str, str]) -> dict[str, str]:
    """MAPPING where no two tensors get the same name; otherwise every tensor keeps its own."""
    if len(set(mapping.values())) == len(mapping):
        return mapping
    return {k: k for k in mapping}


def source_input_names(source: SourceInfo | None) -> list[str]:
    if source is None:
        return []
    if source.inputs:
        return [i.name for i in source.inputs if i.name]
    return [source.input.name] if source.input is not None and source.input.name else []


def renaming(artifact: Artifact | None, source: SourceInfo | None, inputs: Sequence[str],
             outputs: Sequence[str]) -> Renaming:
    """The served names of the runtime's INPUTS and OUTPUTS (its own names), from the manifest's records."""
    src_in = source_input_names(source)
    ins = {a: _pair(a, src_in, len(inputs)) or a for a in inputs}
    recorded = {o.artifact_name: o.name for o in (artifact.fidelity.outputs if artifact and artifact.fidelity
                                                  else []) if o.artifact_name and o.name}
    src_out = list(source.outputs) if source is not None else []
    outs = {a: recorded.get(a) or _pair(a, src_out, len(outputs)) or a for a in outputs}
    return Renaming(inputs=_injective(ins), outputs=_injective(outs))


def aliases(own: str, served: str) -> tuple[str, ...]:
    """What else a request may call the tensor served as SERVED: its own name, and a TF signature key in it."""
    out = [own]
    m = _SIGNATURE.match(own)
    if m:
        out.append(m.group(1))
    return tuple(dict.fromkeys(a for a in out if a != served))


__all__ = ["Renaming", "aliases", "renaming", "source_input_names"]
