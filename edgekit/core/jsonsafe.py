"""JSON from files and requests edgekit does not trust, with the nesting bounded before parsing.

json's C parser recurses once per level of nesting. Where a library has raised the recursion limit
(PyTorch does), a file or request body of 50,000 '[' overflows the C stack, a segfault, before any
RecursionError can be raised (seen in the test suite and in the server). So the depth is counted
first, without recursion, and a document deeper than any edgekit writes or reads is refused.
Every reader of untrusted JSON (manifest, bench.json, baselines, server requests) goes through here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

MAX_DEPTH = 64  # edgekit's files nest under 10 levels; a v2 request under 25 (16 dims of data + 3)
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


class TooDeep(ValueError):
    """The document nests deeper than the caller allows."""

    def __init__(self, depth: int, limit: int) -> None:
        super().__init__(f"the JSON nests {depth} levels deep, more than the {limit} allowed")
        self.depth, self.limit = depth, limit


def depth(data: bytes) -> int:
    """How deep DATA's arrays and objects nest (brackets inside strings not counted), without recursing."""
    bare = _STRINGS.sub(b'""', data)
    codes = np.frombuffer(bare, dtype=np.uint8)
    step = np.isin(codes, _OPEN).astype(np.int32) - np.isin(codes, _CLOSE).astype(np.int32)
    return int(np.cumsum(step).max(initial=0))


def loads(data: str | bytes, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads(DATA), or TooDeep when it nests deeper than MAX_DEPTH; malformed JSON raises what json raises
    (json.JSONDecodeError), and bytes that are not UTF-8 raise UnicodeDecodeError."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if raw.count(b"[") + raw.count(b"{") > max_depth:  # only then can it be too deep: small documents skip the scan
        found = depth(raw)
        if found > max_depth:
            raise TooDeep(found, max_depth)
    try:
        return json.loads(data)
    except RecursionError as exc:  # not reachable within MAX_DEPTH, kept as the last line of defence
        raise TooDeep(max_depth + 1, max_depth) from exc


__all__ = ["MAX_DEPTH", "TooDeep", "depth", "loads"]
