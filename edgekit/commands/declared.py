"""A typer command's options built from declared options (edgekit.core.option_field), not written again.

`edgekit convert`'s parameters are generated from ConvertOptions' declarations: each becomes a
`typer.Option` with the declared flags, help and type, in an `inspect.Signature` that typer reads as
it reads a hand-written function, so `--help`, the docs' CLI reference and shell parsing stay typer's
own. What the user typed goes back through each option's one parser (`Declared.parsed`), the same one
the Python API uses for a string. Not a command itself: no `register`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

import typer

from edgekit.core.option_field import Declared


def cli_default(decl: Declared) -> Any:
    """The default as the command line shows and types it: a list default as its comma list."""
    if decl.form.multiple:
        return None
    if isinstance(decl.default, list):
        return ",".join(str(v) for v in decl.default)
    return decl.default


def parameter(decl: Declared) -> inspect.Parameter:
    """DECL as the typer parameter of the same name (the command's function receives field names)."""
    if not decl.form.cli:
        raise ValueError(f"{decl.name} has no flag of its own (another option fills it).")
    info = typer.Option(cli_default(decl), *decl.flags, help=decl.help + decl.form.cli_help)
    annotation = decl.form.cli_type if decl.form.cli_type is not None else decl.type
    return inspect.Parameter(decl.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def with_signature(func: Callable[..., Any], params: Iterable[inspect.Parameter]) -> Callable[..., Any]:
    """FUNC (taking **values) given the signature typer reads as its parameters: PARAMS, in order."""
    func.__signature__ = inspect.Signature(list(params))  # type: ignore[attr-defined]  # read by inspect.signature
    func.__annotations__ = {}  # typer takes the signature's own annotations (types already, not strings)
    return func


def option_values(options: Iterable[Declared], values: dict[str, Any]) -> dict[str, Any]:
    """The typed VALUES of the declared options, parsed into the fields' values (by field name)."""
    out: dict[str, Any] = {}
    for decl in options:
        if decl.form.cli and decl.name in values:
            out.update(decl.parsed(values[decl.name]))
    return out


__all__ = ["cli_default", "option_values", "parameter", "with_signature"]
