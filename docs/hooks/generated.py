"""mkdocs hook: pages generated at build time, so they cannot go stale.

- `reference/cli.md`: every command of the `edgekit` CLI with its usage, arguments and options, walked
  from the typer app (`typer.main.get_command`), so no option is ever missing from the docs.
- `reference/python-api.md`: every public name of the Python API (edgekit.api.PUBLIC) with its signature
  and docstring, and the public methods and fields of the classes, read from the code itself.
- `security.md`, `contributing.md`: SECURITY.md and CONTRIBUTING.md from the repository root (one
  source; GitHub shows them there), their `docs/...` links rewritten for the site.

`python docs/hooks/generated.py` prints the CLI reference to stdout (`--python`: the Python API reference).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOT_PAGES = {"SECURITY.md": "security.md", "CONTRIBUTING.md": "contributing.md"}


def _escape(text: str) -> str:
    """Help text as Markdown text: nothing in it may turn into markup or HTML."""
    text = text.replace("\\", "\\\\")
    for ch in "<>*_[]`|#":
        text = text.replace(ch, "\\" + ch)
    return text


def _param_lines(cmd, ctx) -> tuple[list[str], list[str]]:
    # duck-typed, not isinstance(click.Argument): typer >= 0.22 vendors its own copy of click
    args, opts = [], []
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:  # hidden
            continue
        names, help_text = record
        line = f"- `{names}`: {_escape(' '.join((help_text or '').split()))}".rstrip(": ")
        (args if param.param_type_name == "argument" else opts).append(line)
    return args, opts


def _command_md(cmd, path: list[str], parent_ctx=None) -> list[str]:
    name = " ".join(path)
    ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent_ctx)
    out = [f"## {name}", ""]
    help_text = (cmd.help or "").strip()
    if help_text:
        # click's \b marks a paragraph not to rewrap; keep such paragraphs as code-free plain lines
        paragraphs = [p.replace("\b\n", "").replace("\b", "") for p in help_text.split("\n\n")]
        for p in paragraphs:
            lines = [ln.rstrip() for ln in p.splitlines()]
            out += [_escape(" ".join(ln.strip() for ln in lines))
                    if not any(ln.startswith("  ") for ln in lines)
                    else "```text\n" + "\n".join(lines) + "\n```", ""]
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out += ["```text", f"Usage: {name} {usage}".rstrip(), "```", ""]
    args, opts = _param_lines(cmd, ctx)
    if args:
        out += ["**Arguments**", "", *args, ""]
    if opts:
        out += ["**Options**", "", *opts, ""]
    if hasattr(cmd, "list_commands"):
        for sub_name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, sub_name)
            if sub is not None and not sub.hidden:
                out += _command_md(sub, [*path, sub_name], ctx)
    return out


def cli_reference() -> str:
    import typer

    from edgekit.cli import app

    root = typer.main.get_command(app)
    lines = [
        "# CLI reference",
        "",
        "Generated from the `edgekit` command itself when the docs are built (`docs/hooks/generated.py`),",
        "so every command and option is here with the help `edgekit COMMAND --help` prints.",
        "What the options do to a model is explained on each command's page.",
        "",
    ]
    lines += _command_md(root, ["edgekit"])
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip() + "\n"


def _doc_md(doc: str | None) -> str:
    """A docstring as Markdown: its paragraphs, code spans kept, HTML and emphasis characters escaped outside them."""
    import inspect

    parts = (inspect.cleandoc(doc or "")).split("`")
    for i in range(0, len(parts), 2):  # outside `code` spans
        for ch in "\\<>*_[]|#":
            parts[i] = parts[i].replace(ch, "\\" + ch)
    return "`".join(parts)


def _signature(name: str, obj) -> str:
    """NAME(params) -> return, annotations as written in the code (they are strings: no quotes around them)."""
    import inspect

    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return f"{name}(...)"
    params, star = [], False
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        if p.kind == p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        star = star or p.kind == p.VAR_POSITIONAL
        text = prefix + p.name
        if p.annotation is not p.empty:
            text += f": {p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        params.append(text)
    ret = sig.return_annotation
    tail = "" if ret is sig.empty else f" -> {ret if isinstance(ret, str) else inspect.formatannotation(ret)}"
    return f"{name}({', '.join(params)}){tail}"


def _members(cls) -> list[str]:
    """- `name(signature)`: its docstring's first paragraph, for the public methods and properties of CLS."""
    import dataclasses

    lines: list[str] = []
    seen: set[str] = set()  # a name a subclass defines hides its base's
    if dataclasses.is_dataclass(cls):
        lines.append("Fields: " + ", ".join(f"`{f.name}`" for f in dataclasses.fields(cls)
                                            if not f.name.startswith("_")) + ".")
        lines.append("")
    for klass in [c for c in cls.__mro__ if c.__module__.startswith("edgekit")]:
        for key, member in vars(klass).items():
            public = not key.startswith("_") or key in ("__getitem__", "__call__")
            if not public or key in seen:
                continue
            seen.add(key)
            target = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
            if not callable(target) or not target.__doc__ or (dataclasses.is_dataclass(cls) and key in ("from_dict",
                                                                                                         "to_dict")):
                continue
            first = _doc_md(target.__doc__).split("\n\n")[0].replace("\n", " ")
            shown = f"`{key}` (property)" if isinstance(member, property) else f"`{_signature(key, getattr(cls, key))}`"
            lines.append(f"- {shown}: {first}")
    return lines


def python_api_reference() -> str:
    """The Python API's reference page: each name of edgekit.api.PUBLIC, its signature and docstring."""
    import importlib

    from edgekit.api import PUBLIC
    from edgekit.core.errors import EdgekitError

    lines = [
        "# Python API reference",
        "",
        "Generated from the code when the docs are built (`docs/hooks/generated.py`): every name `edgekit`",
        "exports (the one list is `edgekit.api.PUBLIC`), with its signature and docstring. The guide, with",
        "examples, is [the Python API page](../python-api.md).",
        "",
    ]
    objects = {}
    for name, target in PUBLIC.items():
        module, _, attr = target.partition(":")
        value = importlib.import_module(module)
        objects[name] = getattr(value, attr) if attr else getattr(value, name)  # a callable package: its function
    errors = [n for n, o in objects.items() if isinstance(o, type) and issubclass(o, EdgekitError)]
    functions = [n for n, o in objects.items() if not isinstance(o, type)]
    classes = [n for n, o in objects.items() if isinstance(o, type) and n not in errors]
    lines += ["## Functions", ""]
    for name in functions:
        lines += [f"### edgekit.{name}", "", "```python", _signature(f"edgekit.{name}", objects[name]), "```", "",
                  _doc_md(objects[name].__doc__), ""]
    lines += ["## Classes and records", ""]
    for name in classes:
        cls = objects[name]
        lines += [f"### edgekit.{name}", "", _doc_md(cls.__doc__), "", *_members(cls), ""]
    lines += ["## Errors", "", "Every error has `message` and `hint`; `exit_code` is what the CLI exits with.", ""]
    for name in errors:
        lines += [f"### edgekit.{name}", "", f"{_doc_md(objects[name].__doc__)} (exit code "
                  f"{objects[name].exit_code}; a subclass of {objects[name].__mro__[1].__name__}.)", ""]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).rstrip() + "\n"


def _root_page(src: str) -> str:
    text = (ROOT / src).read_text(encoding="utf-8")
    # repository-relative links into docs/ become site-relative
    return re.sub(r"\]\(docs/", "](", text)


def on_files(files, config):
    from mkdocs.structure.files import File

    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    files.append(File.generated(config, "reference/python-api.md", content=python_api_reference()))
    for src, dest in ROOT_PAGES.items():
        if (ROOT / src).exists():
            files.append(File.generated(config, dest, content=_root_page(src)))
    return files


if __name__ == "__main__":
    import sys

    print(python_api_reference() if "--python" in sys.argv else cli_reference(), end="")
