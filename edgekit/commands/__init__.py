"""CLI commands, one module each; every module exposes `register(app)`.

Command modules import only typer at module level; the work they call imports what it needs.
"""

from __future__ import annotations

import importlib

import typer

COMMAND_MODULES: list[str] = [
    "convert",
    "inspect",
    "profile",
    "bench",
    "check",
    "serve",
    "export",
    "emulate",
]


def register_all(app: typer.Typer) -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"edgekit.commands.{name}").register(app)
