"""No script or helper module the tests put on sys.path shadows an installed library: bench/ncnn.py once did, so a
test that ran after the zoo tests (which put bench/ on the path) imported bench's script as `ncnn` and the ncnn
runtime failed with "module 'ncnn' has no attribute 'Net'". Every .py in bench/ and every non-test module under
tests/ must not share its name with a top-level module of an installed distribution."""

from __future__ import annotations

from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_no_bench_or_test_helper_module_is_named_like_an_installed_library() -> None:
    installed = set(packages_distributions())
    helpers = [*REPO.glob("bench/*.py"),
               *(p for p in REPO.glob("tests/**/*.py") if not p.name.startswith(("test_", "conftest")))]
    clashes = sorted(str(p.relative_to(REPO)) for p in helpers if p.stem in installed and p.stem != "__init__")
    assert not clashes, f"these shadow installed libraries when their folder is on sys.path: {clashes}"
