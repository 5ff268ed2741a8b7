"""Shared fixtures: the bundled model, one real conversion of it, and the tiny CNN in every format.

Each fixture here is defined once for the whole suite (session scope), so a model is built at most
once per run, whichever test directories are selected. Tests that run a real conversion or load
TensorFlow/torch for seconds carry `@pytest.mark.slow`; `make test-fast` leaves them out.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "models"
# the repository's own `models` package (the bundled models' builders and data, models/__init__.py) importable from
# every test, whichever ran first: `pytest` (unlike `python -m pytest`) does not put the root on sys.path, and
# tests/models (a folder of tests, no __init__) then answered `import models` as an empty namespace package, so a
# test importing models.detection_data passed after tests/models' fixtures had put the root there and failed alone.
# Appended, not prepended: a regular package anywhere on the path wins over a namespace folder, and nothing of the
# root shadows an installed library (tests/test_no_shadowing.py)
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# a cache of this session's own (probe marks, CPU peak): tests never read or fill the user's ~/.cache
_CACHE = tempfile.mkdtemp(prefix="edgekit-test-cache-")
os.environ["EDGEKIT_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def bundled_pt2() -> Path:
    return MODELS / "mnist_cnn.pt2"


@pytest.fixture(scope="session")
def bundled_conversion(tmp_path_factory: pytest.TempPathFactory, bundled_pt2: Path):
    """The `make demo` conversion, run once: ONNX + TFLite at every precision, calibrated on MNIST."""
    from edgekit.conversion.pipeline import convert

    out = tmp_path_factory.mktemp("bundled") / "mnist_cnn"
    return convert(bundled_pt2, "onnx,tflite", "fp32,fp16,dynamic,int8", calib="mnist", out=out)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tiny CNN in every format whose converter is installed (edgekit.testing.tiny_cnn).

    {"models": {key: path}, "skipped": {group: reason}}; built once per session (torch and TensorFlow,
    several seconds), so the tests that take it are marked slow.
    """
    from edgekit.testing import tiny_cnn

    return tiny_cnn.build(tmp_path_factory.getbasetemp() / "edgekit-tiny-models")


# Session fixtures that run a real conversion or build models with torch and TensorFlow (seconds
# each): every test that takes one is slow, whichever file it is in, without a marker to forget.
SLOW_FIXTURES = frozenset({"bundled_conversion", "tiny_models", "tf_models", "every_target"})


# Session fixtures that cost nothing to build twice: they do not tie their tests to one worker.
CHEAP_SESSION_FIXTURES = frozenset({"repo", "bundled_pt2", "fixtures_dir"})


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the xdist_group marks into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    if config.pluginmanager.hasplugin("xdist"):
        for item, group in shared_work_groups(items).items():
            item.add_marker(pytest.mark.xdist_group(group))


def shared_work_groups(items: list[pytest.Item]) -> dict[pytest.Item, str]:
    """Which tests must run on one worker (`make test` runs pytest-xdist with --dist loadgroup): those sharing work.

    A session fixture of the suite's own (a real conversion, the arm64 userland, an sshd) or a module's fixture
    (its module's real conversion) is built once per worker that asks for it, so the tests sharing one go to one
    worker: tests are linked through each such fixture they take, and each connected set is one group. Tests that
    take none are spread one by one.
    """
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    keys_of: dict[pytest.Item, list[str]] = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        keys: list[str] = []
        for name, defs in (info.name2fixturedefs.items() if info is not None else ()):
            scope = defs[-1].scope if defs else "function"
            if scope in ("module", "class", "package"):
                keys.append(f"module:{item.nodeid.split('::')[0]}")
            elif scope == "session" and name not in CHEAP_SESSION_FIXTURES and _ours(defs[-1]):
                keys.append(f"session:{name}")
        if keys:
            keys_of[item] = keys
            for key in keys[1:]:
                parent[find(key)] = find(keys[0])
    return {item: find(keys[0]) for item, keys in keys_of.items()}


def _ours(fixturedef: Any) -> bool:
    """A fixture defined in this repository's tests (not pytest's own, like tmp_path_factory)."""
    import inspect

    try:
        return Path(inspect.getfile(fixturedef.func)).resolve().is_relative_to(REPO / "tests")
    except (TypeError, OSError):
        return False
