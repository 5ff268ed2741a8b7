"""mkdocs hook: pages generated at build time, so they cannot go stale.

- `reference/cli.md`: every command of the `edgekit` CLI with its usage, arguments and options, walked
  from the typer app (`typer.main.get_command`), so no option is ever missing from the docs.
- `security.md`, `contributing.md`: SECURITY.md and CONTRIBUTING.md from the repository root (one
  source; GitHub shows them there), their `docs/...` links rewritten for the site.

`python docs/hooks/generated.py` prints the CLI reference to stdout.
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


def _root_page(src: str) -> str:
    text = (ROOT / src).read_text(encoding="utf-8")
    # repository-relative links into docs/ become site-relative
    return re.sub(r"\]\(docs/", "](", text)


def on_files(files, config):
    from mkdocs.structure.files import File

    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    for src, dest in ROOT_PAGES.items():
        if (ROOT / src).exists():
            files.append(File.generated(config, dest, content=_root_page(src)))
    return files


if __name__ == "__main__":
    print(cli_reference(), end="")
