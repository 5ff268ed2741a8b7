"""The Python in README.md and docs/ is code a user pastes: every block parses and names nothing it does not define
(ruff's undefined-name rules), and README's Python quickstart runs as written, in a fresh interpreter.

A block that works on something only the reader has says so in a line `# given: NAME[, NAME] (what it is)` (README's
"save your model" block: the user's trained `model`); those names count as defined, and no others."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
GIVEN = re.compile(r"^# given: ([\w, ]+)", re.M)


def python_blocks() -> list[tuple[str, str]]:
    """(where, code) for every ```python block of README.md and the docs."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "examples").rglob("*.md"))]
    found = []
    for page in pages:
        text = page.read_text()
        for m in BLOCK.finditer(text):
            line = text[:m.start()].count("\n") + 1
            found.append((f"{page.relative_to(REPO)}:{line}", m.group(1)))
    return found


BLOCKS = python_blocks()


def test_the_docs_have_python_to_check() -> None:
    assert any(where.startswith("README.md") for where, _ in BLOCKS) and len(BLOCKS) >= 4


@pytest.mark.parametrize(("where", "code"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_a_python_block_parses_and_defines_what_it_uses(where: str, code: str) -> None:
    compile(code, where, "exec")
    given = [name.strip() for m in GIVEN.finditer(code) for name in m.group(1).split(",") if name.strip()]
    code = "".join(f"{name} = ...\n" for name in given) + code
    # F821 undefined name, F822 undefined name in __all__, F823 local used before assignment
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select",
                           "F821,F822,F823", "--output-format", "concise", "--stdin-filename", "snippet.py", "-"],
                          input=code, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{where}: {done.stdout}{done.stderr}"


@pytest.mark.slow  # a real conversion to ONNX and TFLite at fp32 and int8
def test_the_readme_python_quickstart_runs_as_written(tmp_path: Path) -> None:
    code = next(code for where, code in BLOCKS if where.startswith("README.md") and "edgekit.convert(" in code)
    script = tmp_path / "quickstart.py"
    script.write_text(code + '\nprint("OUTPUT", y.shape, y.dtype)\n')
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "model.int8.tflite" in done.stdout and "OUTPUT (8, 4) float32" in done.stdout
    assert (tmp_path / "edgekit-out" / "model" / "manifest.json").is_file()
