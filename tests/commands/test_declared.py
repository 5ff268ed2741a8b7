"""Every command's options are built from declarations (edgekit.commands.declared), and a flag that several commands
take is declared once.

Issue 38: `convert` alone was built from its declarations; 63 `typer.Option`s were spelled by hand elsewhere, the
remote ones twice, and the same flag's help and default drifted from command to command.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

import edgekit
from edgekit.cli import app
from edgekit.commands.declared import declarations
from edgekit.core import flags
from edgekit.core.option_field import option

PACKAGE = Path(edgekit.__file__).resolve().parent
BUILDER = PACKAGE / "commands" / "declared.py"  # the one module that turns declarations into typer.Options

def hand_spelled_options(source: str) -> list[int]:
    """The lines where SOURCE calls typer's Option itself (`typer.Option(...)`, or `Option` imported from typer)."""
    tree = ast.parse(source)
    aliases = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and node.module and node.module.split(".")[0] == "typer" for a in node.names if a.name == "Option"}
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr == "Option" and isinstance(f.value, ast.Name)
                and f.value.id == "typer") or (isinstance(f, ast.Name) and f.id in aliases):
            lines.append(node.lineno)
    return lines


def test_the_scan_finds_an_option_spelled_by_hand() -> None:
    assert hand_spelled_options("import typer\n\ndef f(x: int = typer.Option(1, '--x')): ...\n") == [3]
    assert hand_spelled_options("from typer import Option as Opt\nOpt(1)\n") == [2]
    assert hand_spelled_options("import typer\ntyper.Argument(...)\noption(1, 'help')\n") == []


def test_no_module_spells_a_typer_option_by_hand() -> None:
    found = {str(p.relative_to(PACKAGE)): lines for p in sorted(PACKAGE.rglob("*.py")) if p != BUILDER
             and (lines := hand_spelled_options(p.read_text(encoding="utf-8")))}
    assert not found, f"typer.Option spelled by hand (declare it with option() or a core.flags Flag): {found}"


def _commands() -> Iterator[tuple[str, Any]]:
    """(name, click command) for `edgekit` itself, every command and every subcommand."""
    def walk(cmd: Any, name: str) -> Iterator[tuple[str, Any]]:
        yield name, cmd
        for sub_name, sub in sorted(getattr(cmd, "commands", {}).items()):
            yield from walk(sub, f"{name} {sub_name}".strip())

    yield from walk(typer.main.get_command(app), "")


def test_every_option_of_every_command_is_built_from_its_declaration() -> None:
    seen = 0
    for name, cmd in _commands():
        decls = {d.name: d for d in declarations(cmd.callback)}
        for param in cmd.params:
            if param.param_type_name != "option":
                continue
            seen += 1
            decl = decls.get(param.name)
            assert decl is not None, f"`edgekit {name}` {param.opts} is not built from a declared option"
            assert decl.flag in param.opts and param.help == decl.help + decl.form.cli_help, (name, param.opts)
    assert seen > 100  # every command's options were looked at, not none


def declared_twice(commands: Iterable[tuple[str, Any]]) -> dict[str, list[str]]:
    """The flags that several of COMMANDS (name, click command) take from more than one declaration, with those
    commands: a shared Flag, or one field inherited, is one declaration."""
    uses: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for name, cmd in commands:
        for decl in declarations(cmd.callback):
            uses[decl.flag].append((name or "edgekit", decl))
    split = {}
    for flag, found in uses.items():
        sources = {id(d.form.origin or d.form) for _, d in found}
        if len({n for n, _ in found}) > 1 and len(sources) > 1:
            split[flag] = sorted({n for n, _ in found})
    return split


def _app_of(**options: type) -> list[tuple[str, Any]]:
    """(name, click command) of a throwaway app with one command per OPTIONS dataclass."""
    from edgekit.commands.declared import command

    throwaway = typer.Typer()
    for name, cls in options.items():
        command(throwaway.command, cls, name=name)(lambda o: None)
    group = typer.main.get_command(throwaway)
    return [(name, group.commands[name]) for name in options]  # type: ignore[attr-defined]  # get_command: a Group


def test_the_scan_finds_a_flag_declared_twice() -> None:
    @dataclass
    class First:
        keep: bool = option(False, "Keep it.", flags=("--keep",))
        device: str = flags.DEVICE()

    @dataclass
    class Second:
        keep: bool = option(False, "Keep what was there.", flags=("--keep",))
        device: str = flags.DEVICE(help="Where.")  # the same Flag with its own help: still one declaration

    assert declared_twice(_app_of(one=First, two=Second)) == {"--keep": ["one", "two"]}


def test_a_flag_several_commands_take_is_declared_once() -> None:
    """Issue 38: no flag is two declarations (convert's --force, --out, --model, --trust-model, --input-shape,
    --batch and --edgetpu-min-runtime were ConvertOptions' own; emulate check's --json took a file)."""
    split = declared_twice(_commands())
    assert not split, f"declared more than once (take edgekit.core.flags' Flag, or add one there): {split}"
    uses: dict[str, set[str]] = defaultdict(set)
    for name, cmd in _commands():
        for decl in declarations(cmd.callback):
            uses[decl.flag].add(name)
    # the flags the issue names are each taken by several commands, from one declaration
    for flag in ("--remote", "--device", "--threads", "--runs", "--option", "--remote-cache", "--identity", "--force",
                 "--out", "--model", "--trust-model", "--input-shape", "--batch", "--edgetpu-min-runtime", "--json"):
        assert len(uses[flag]) > 1, flag


def test_a_shared_flag_keeps_its_spelling_on_every_command() -> None:
    spelled: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for _, cmd in _commands():
        for decl in declarations(cmd.callback):
            if decl.form.origin is not None:
                spelled[decl.flag].add(decl.flags)
    assert spelled["--device"] == {("--device", "-d")} and spelled["--runtime"] == {("--runtime", "-r")}
    assert all(len(forms) == 1 for forms in spelled.values()), spelled


def test_what_was_typed_reaches_the_command_as_its_options_record(capsys) -> None:
    """`--option` is parsed by its one parser on every command that takes it: a bad pair is refused alike."""
    from edgekit.cli import main

    for argv in (["profile", "model.onnx", "--option", "xnnpack"], ["serve", "model.onnx", "--option", "xnnpack"]):
        assert main(argv) == 2
        assert "--option 'xnnpack' is not KEY=VALUE." in capsys.readouterr().err
