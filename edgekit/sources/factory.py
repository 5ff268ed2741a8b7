"""Resolve `--model package.module:function` to a model factory (user code, imported on request)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from edgekit.core.errors import UsageError


def load_factory(spec: str) -> Callable[[], Any]:
    """Import the callable SPEC names. The current folder is put on sys.path first, as uvicorn does."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(
            f"--model '{spec}' is not of the form package.module:function.",
            hint="For example: --model models.mnist_cnn:build (run from the folder that holds 'models/').",
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(
            f"Cannot import '{module_name}' for --model: {exc}.",
            hint="Run edgekit from the folder that holds the package, or install it (pip install -e .).",
        ) from exc
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        have = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]
        raise UsageError(f"'{module_name}' has no callable '{attr}'.", hint=f"Callables there: {', '.join(have[:12])}.")
    return fn
