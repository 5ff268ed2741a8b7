"""edgekit.core.jsonsafe: untrusted JSON is refused by depth before json's recursive C parser sees it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from edgekit.core import jsonsafe


def test_depth_ignores_brackets_inside_strings() -> None:
    assert jsonsafe.depth(b'{"a": ["[[[[", {"b": "]]{{"}]}') == 3
    assert jsonsafe.depth(b'"\\"[[["') == 0


def test_loads_accepts_what_json_accepts_within_the_limit() -> None:
    doc = {"artifacts": [{"fidelity": {"outputs": [[1, 2], [3]]}}]}
    assert jsonsafe.loads(json.dumps(doc)) == doc
    assert jsonsafe.loads(json.dumps(doc).encode()) == doc
    with pytest.raises(json.JSONDecodeError):
        jsonsafe.loads("{nope")


def test_loads_refuses_a_document_deeper_than_the_limit() -> None:
    with pytest.raises(jsonsafe.TooDeep) as info:
        jsonsafe.loads("[" * 65 + "]" * 65)
    assert info.value.depth == 65 and info.value.limit == 64
    assert jsonsafe.loads("[" * 64 + "]" * 64, max_depth=64) is not None


READERS = """
import sys
from pathlib import Path
sys.setrecursionlimit(1_000_000)  # what a library that raises the limit leaves behind
from edgekit.core.artifact import Manifest
from edgekit.check.files import parse_json
from edgekit.core.errors import UsageError
from edgekit.serve.protocol import load_json
from edgekit.serve.errors import RequestError
deep = "[" * 300_000 + "]" * 300_000
path = Path(sys.argv[1]) / "manifest.json"
path.write_text(deep)
for call in (lambda: Manifest.read(path), lambda: parse_json(deep, "x"), lambda: load_json(deep.encode())):
    try:
        call()
    except (UsageError, RequestError) as exc:
        print(type(exc).__name__, "nested" in str(exc) or "nests" in str(exc))
"""


def test_every_reader_refuses_deep_nesting_without_overflowing_the_c_stack(tmp_path) -> None:
    # in a child: with a raised recursion limit, plain json.loads of this document is a segfault
    proc = subprocess.run([sys.executable, "-c", READERS, str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["UsageError", "True", "UsageError", "True", "RequestError", "True"]
