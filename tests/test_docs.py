"""The documentation builds strictly, README's links into it resolve, and the CLI reference misses no option.

The mkdocs build (mkdocs.yml, `strict: true`, `validation: anchors: warn`) fails on a link to a missing page
or a missing anchor; it does not see README.md, CONTRIBUTING.md or SECURITY.md as GitHub shows them, so their
relative links and anchors are checked here with the same heading ids (GitHub-style slugs) the site uses.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
ANCHOR_ID = re.compile(r"""\bid=["']([^"']+)["']""")


def test_docs_build_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    log = proc.stdout + proc.stderr
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert proc.returncode == 0 and not warnings, log
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").exists()


def _ids(md_file: Path) -> set[str]:
    """Heading ids as the site (and GitHub) make them, plus explicit ids (<a id=...>, {#id})."""
    import markdown
    from pymdownx.slugs import slugify

    html = markdown.markdown(md_file.read_text(encoding="utf-8"),
                             extensions=["attr_list", "tables", "toc", "pymdownx.superfences"],
                             extension_configs={"toc": {"slugify": slugify(case="lower")}})
    return set(ANCHOR_ID.findall(html))


def _links(md_file: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", md_file.read_text(encoding="utf-8"), flags=re.S)  # not in code blocks
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


@pytest.mark.parametrize("page", ["README.md", "CONTRIBUTING.md", "SECURITY.md"])
def test_relative_links_and_anchors_resolve(page: str) -> None:
    source = ROOT / page
    broken = []
    for target in _links(source):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        dest = (source.parent / path).resolve() if path else source
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _ids(dest):
            broken.append(f"{target}: no heading or id '{anchor}' in {dest.relative_to(ROOT)}")
    assert not broken, f"{page}: " + "; ".join(broken)


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; reference material belongs in docs/"
    # CI and reviewers read the two commands at the very top
    assert lines[0] == "# edgekit" and lines[2] == "```sh", lines[:3]
    assert lines[3].startswith("make demo") and lines[4].startswith("make test"), lines[3:5]


def test_no_pointer_to_files_users_do_not_have() -> None:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [str(p.relative_to(ROOT)) for p in pages if "shared/" in p.read_text(encoding="utf-8")]
    assert not found, f"pointers into the project's shared/ folder, which users do not have: {found}"


def _hook():
    spec = importlib.util.spec_from_file_location("docs_hook", ROOT / "docs" / "hooks" / "generated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_has_every_command_and_option() -> None:
    import typer

    from edgekit.cli import app

    page = _hook().cli_reference()
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="edgekit")
    missing = []
    for name in root.list_commands(ctx):
        cmd = root.get_command(ctx, name)
        if f"## edgekit {name}\n" not in page:
            missing.append(f"edgekit {name}")
            continue
        section = page.split(f"## edgekit {name}\n", 1)[1].split("\n## ", 1)[0]
        plain = re.sub(r"\\(.)", r"\1", section)  # Markdown escapes undone
        sub_ctx = cmd.context_class(cmd, info_name=name, parent=ctx)
        for param in cmd.get_params(sub_ctx):
            if getattr(param, "hidden", False):
                continue
            for opt in getattr(param, "opts", []):
                if opt.startswith("-") and f"{opt}" not in section:
                    missing.append(f"edgekit {name} {opt}")
            help_text = " ".join((getattr(param, "help", None) or "").split())
            if help_text and help_text[:40] not in plain:
                missing.append(f"edgekit {name} {param.name}: its help")
    assert not missing, f"not in the CLI reference: {missing}"
