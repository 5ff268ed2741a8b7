"""What may differ between two runs of the same conversion: the promise CI caches and `edgekit check` rely on.

The same source, options and tool versions give byte-identical artifacts (tests/core/test_reproducible.py
converts twice, in two processes, and compares every sha256). The manifest is identical too, except
for the fields listed here, which say when the run happened and what it cost: the manifest names
them itself (`varies_between_runs`), and `stable_part` drops them, so two manifests can be compared
as a whole. A field path is dot-separated keys (fnmatch patterns: `*_seconds`); `[]` means every
item of a list and `**` any depth (`**.seconds`: every key named seconds, wherever it is).
"""

from __future__ import annotations

import copy
import fnmatch
from typing import Any

VARIES_BETWEEN_RUNS = (
    "created",  # when the run happened
    "run",  # what it cost: wall seconds, peak memory
    "**.seconds",  # every timing, at any depth: artifacts[].seconds, extra.steps[].seconds, ...
    "**.*_seconds",  # extra.validation_seconds and the like
)


def split_path(path: str) -> list[str]:
    """'artifacts[].extra.steps[].seconds' -> ['artifacts', '[]', 'extra', 'steps', '[]', 'seconds']."""
    tokens: list[str] = []
    for part in path.split("."):
        key = part.rstrip("[]")
        if key:
            tokens.append(key)
        tokens.extend("[]" for _ in range((len(part) - len(key)) // 2))
    return tokens


def _children(node: Any) -> list[Any]:
    return list(node.values()) if isinstance(node, dict) else list(node) if isinstance(node, list) else []


def _drop(node: Any, tokens: list[str]) -> None:
    """Delete what TOKENS match below NODE: a key (fnmatch pattern), `[]` every list item, `**` any depth."""
    if not tokens:
        return
    head, rest = tokens[0], tokens[1:]
    if head == "**":
        _drop(node, rest)
        for child in _children(node):
            _drop(child, tokens)
    elif head == "[]":
        for item in node if isinstance(node, list) else []:
            _drop(item, rest)
    elif isinstance(node, dict):
        for key in [k for k in node if fnmatch.fnmatchcase(str(k), head)]:
            if rest:
                _drop(node[key], rest)
            else:
                del node[key]


def stable_part(manifest: dict[str, Any], fields: Any = None) -> dict[str, Any]:
    """A copy of MANIFEST (manifest.json as a dict) without the fields that vary between runs.

    FIELDS defaults to the manifest's own `varies_between_runs`, else this edgekit's list; the
    `varies_between_runs` key itself is kept, so a changed list shows as a difference.
    """
    if fields is None:
        fields = manifest.get("varies_between_runs") or VARIES_BETWEEN_RUNS
    out = copy.deepcopy(manifest)
    for path in fields:
        if isinstance(path, str):
            _drop(out, split_path(path))
    return out


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """The paths ('artifacts[2].fidelity.cosine') where two JSON documents differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in dict.fromkeys([*a, *b])
                for d in (differences(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
                          if k in a and k in b else [f"{path}.{k}" if path else str(k)])]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "(the whole document)"]


__all__ = ["VARIES_BETWEEN_RUNS", "differences", "split_path", "stable_part"]
