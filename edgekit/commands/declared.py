"""Every command's options built from declared options (edgekit.core.option_field), not written again.

A command's options are one dataclass of `option()` fields (and shared `Flag`s): each becomes a
`typer.Option` with the declared flags, help and type, in an `inspect.Signature` that typer reads as it
reads a hand-written function, so `--help`, the docs' CLI reference and shell parsing stay typer's own.
What the user typed goes back through each option's one parser (`Declared.parsed`), the same one the
Python API uses for a string. `command()` registers a function that takes the command's arguments and
one `options` record; `edgekit convert` assembles its parameters itself from the same pieces (its
options are gathered from the target table). Nothing here spells a `typer.Option` of its own, and no
command does (tests/commands/test_declared.py). Not a command itself: no `register`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import typer

from edgekit.core.option_field import Declared, declared

F = TypeVar("F", bound=Callable[..., Any])


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
    form = decl.form
    info = typer.Option(cli_default(decl), *decl.flags, help=decl.help + form.cli_help, min=form.min,
                        callback=form.callback, is_eager=form.eager)
    annotation = form.cli_type if form.cli_type is not None else decl.type
    return inspect.Parameter(decl.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def argument(name: str, annotation: Any, help: str, default: Any = ...) -> inspect.Parameter:  # noqa: A002
    """A positional argument of a command (typer.Argument): what the command acts on, not an option."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                             default=typer.Argument(default, help=help))


def context() -> inspect.Parameter:
    """The click context, for a command that passes its extra arguments on (`edgekit emulate run`)."""
    return inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)


def with_signature(func: Callable[..., Any], params: Iterable[inspect.Parameter],
                   options: Iterable[Declared] = ()) -> Callable[..., Any]:
    """FUNC (taking **values) given the signature typer reads as its parameters: PARAMS, in order; OPTIONS are
    the declarations its options were built from (`declarations` reads them back from the command)."""
    func.__signature__ = inspect.Signature(list(params))  # type: ignore[attr-defined]  # read by inspect.signature
    func.__annotations__ = {}  # typer takes the signature's own annotations (types already, not strings)
    func.declared_options = tuple(d for d in options if d.form.cli)  # type: ignore[attr-defined]  # see declarations
    return func


def declarations(callback: Callable[..., Any] | None) -> tuple[Declared, ...]:
    """The declared options a command's callback (typer's wrapper of a `with_signature` function, whose attributes
    it copies) was built from; () for one built otherwise."""
    return tuple(getattr(callback, "declared_options", ()))


def option_values(options: Iterable[Declared], values: dict[str, Any]) -> dict[str, Any]:
    """The typed VALUES of the declared options, parsed into the fields' values (by field name)."""
    out: dict[str, Any] = {}
    for decl in options:
        if decl.form.cli and decl.name in values:
            out.update(decl.parsed(values[decl.name]))
    return out


def parameters(options: type) -> list[inspect.Parameter]:
    """The typer parameters of every option the dataclass OPTIONS declares with a flag, in field order."""
    return [parameter(d) for d in declared(options) if d.form.cli]


def command(register: Callable[..., Callable[[Callable[..., Any]], Any]], options: type,
            *arguments: inspect.Parameter, **settings: Any) -> Callable[[F], F]:
    """Decorate a command's body: `register(**settings)` (e.g. `app.command("bench", help=HELP)`, or
    `app.callback`) receives a function typer reads as ARGUMENTS then OPTIONS' options, which calls the
    body with `OPTIONS(...)` filled from what was typed, then the arguments by name. Without a
    `help` setting, typer takes the body's docstring."""
    decls = declared(options)
    names = [p.name for p in arguments]

    def decorate(body: F) -> F:
        def run(**values: Any) -> Any:
            given = {name: values.pop(name) for name in names}
            return body(options(**option_values(decls, values)), **given)

        run.__doc__ = body.__doc__
        register(**settings)(with_signature(run, [*arguments, *parameters(options)], decls))
        return body

    return decorate


__all__ = ["argument", "cli_default", "command", "context", "declarations", "option_values", "parameter",
           "parameters", "with_signature"]
