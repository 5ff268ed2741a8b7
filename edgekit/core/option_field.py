"""An option declared once: a dataclass field that carries its help, its command-line form and its parser.

`edgekit convert`'s options used to be written three times (the ConvertOptions field, the typer
parameter, the API keyword) and drifted apart. As Olive declares each pass's options with the pass,
an option here is one `option(...)` field: `edgekit.conversion.options` declares the ones every conversion has,
a target's own file declares the target's (the Edge TPU compiler's in `edgekit.targets.edgetpu`),
and the CLI (`edgekit.commands.declared`) and the Python API (`ConvertOptions.from_keywords`) are
both built from these declarations. Every other command declares its options the same way, in a
dataclass beside its command (edgekit.commands.*, edgekit.api.options for profile and bench, whose
Python functions read their defaults from it), and a flag that several commands take (--device,
--threads, --json, ...) is declared once as a `Flag` (edgekit.core.flags, edgekit.remote.options)
that each of them uses, with its own default or help only where the flag means something else there.

A leaf module (the standard library only), so a target's file can declare options without an import
cycle with `edgekit.conversion.options`, which gathers them.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_OWN: Any = object()  # "the flag's own default" (`...` is a default too: required)
EACH: Any = object()  # a Flag's default where each command gives its own (read from the record it fills)

# (the value as typed, the flag it was typed with) -> the field's value; raises UsageError for a bad one
Parser = Callable[[Any, str], Any]


@dataclass(frozen=True)
class OptionForm:
    """How one option is typed: on the command line, and as a string given to the Python API."""

    help: str
    flags: tuple[str, ...] = ()  # the long flag first, then short ones; () -> --field-name (--x/--no-x for a bool)
    cli_type: Any = None  # the type typed on the command line where the field's differs (str for a comma list)
    multiple: bool = False  # the flag may be repeated: the parser gets the list of what was typed
    parse: Parser | None = None  # what was typed -> the field's value (a tuple of values where `fills` is set)
    fills: tuple[str, ...] = ()  # the fields one parsed value fills, where it fills more than its own
    cli_help: str = ""  # added to the help on the command line only (how to type several)
    cli: bool = True  # False: no flag of its own (another option's `fills` reaches it)
    min: int | float | None = None  # the smallest value the command line takes (typer refuses a smaller one)
    callback: Callable[[Any], Any] | None = None  # run by typer as the flag is read (--version)
    eager: bool = False  # read before the other options (--version)
    origin: Flag | None = field(default=None, compare=False)  # the shared Flag this option is taken from


def option(default: Any, help: str, **form: Any) -> Any:
    """A dataclass field declaring one option; FORM is OptionForm's keywords. A list or dict default is copied; a
    default of `...` makes the option required on the command line."""
    return _field(default, OptionForm(help, **form))


@dataclass(frozen=True)
class Flag:
    """A flag several commands take, declared once: its spelling, form, default and help.

    `THREADS(...)` is the flag as one command's option field; a command gives its own DEFAULT or HELP
    only where the flag means something else there (bench's --runs: per row, 50), never its spelling,
    short form or parser, so `-d` is --device on every command.
    """

    default: Any
    form: OptionForm

    @property
    def flag(self) -> str:
        """The long flag, as messages name the option: "--device"."""
        return self.form.flags[0].split("/")[0]

    def __call__(self, default: Any = _OWN, help: str | None = None) -> Any:
        """This flag as a dataclass field of one command's options (its default and help unless given here)."""
        default = self.default if default is _OWN else default
        if default is EACH:
            raise TypeError(f"{self.flag} has no default of its own: each command that takes it gives one.")
        form = dataclasses.replace(self.form, help=help if help is not None else self.form.help, origin=self)
        return _field(default, form)


def flag(default: Any, help: str, *, flags: tuple[str, ...], **form: Any) -> Flag:
    """A flag declared once for every command that takes it; FLAGS spell it (a shared flag is never named from a
    field), FORM is OptionForm's other keywords. A default of `...` makes it required; EACH: every command gives its
    own (where it is read from the record the flag fills, as --runs from MeasureSettings)."""
    return Flag(default, OptionForm(help, flags=flags, **form))


def _field(default: Any, form: OptionForm) -> Any:
    metadata = {"help": form.help, "option": form}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Declared:
    """One gathered option: its field's name, resolved type and default, and how it is typed."""

    name: str
    type: Any
    default: Any
    form: OptionForm

    @property
    def help(self) -> str:
        return self.form.help

    @property
    def flags(self) -> tuple[str, ...]:
        """The typer declaration: ("--out", "-o"), or "--x/--no-x" for a boolean without flags of its own."""
        if self.form.flags:
            return self.form.flags
        dashed = self.name.replace("_", "-")
        return (f"--{dashed}/--no-{dashed}",) if self.type is bool else (f"--{dashed}",)

    @property
    def flag(self) -> str:
        """The long flag, as messages name the option: "--out"."""
        return self.flags[0].split("/")[0]

    @property
    def api_names(self) -> tuple[str, ...]:
        """The Python API's keywords for it: the field's name and its flag's (out_dir and out)."""
        names = [self.name]
        if self.form.cli:
            names.append(self.flag.lstrip("-").replace("-", "_"))
        return tuple(dict.fromkeys(names))

    def parsed(self, value: Any) -> dict[str, Any]:
        """{field: value} for VALUE as typed, through the option's parser (one place per option)."""
        if self.form.parse is None:
            return {self.name: value}
        result = self.form.parse(value, self.flag)
        if self.form.fills:
            return dict(zip(self.form.fills, result, strict=True))
        return {self.name: result}


def declared(cls: type) -> list[Declared]:
    """The options a dataclass of `option()` fields declares, in field order; TypeError for a bare field."""
    hints = typing.get_type_hints(cls)
    out: list[Declared] = []
    for f in dataclasses.fields(cls):
        form = f.metadata.get("option")
        if not isinstance(form, OptionForm):
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with option(default, help): it has no help.")
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        out.append(Declared(f.name, hints[f.name], default, form))
    return out


__all__ = ["EACH", "Declared", "Flag", "OptionForm", "Parser", "declared", "flag", "option"]
