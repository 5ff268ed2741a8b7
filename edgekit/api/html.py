"""A rich Table as an HTML <table>, for Jupyter's `_repr_html_`: the CLI's table, cell for cell, with its colours.

The tables are built once, for the terminal (edgekit.report); a notebook gets the same columns and cells,
their rich markup ("[green]pass[/green]") turned into styled spans rather than box-drawing text.
"""

from __future__ import annotations

import html
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text


def _cell(value: Any, console: Console) -> str:
    text = value if isinstance(value, Text) else Text.from_markup(str(value)) if isinstance(value, str) \
        else Text(str(value))
    parts = []
    for segment in text.render(console):
        body = html.escape(segment.text)
        css = segment.style.get_html_style() if segment.style else ""
        parts.append(f'<span style="{css}">{body}</span>' if css else body)
    return "".join(parts)


def table_html(table: Table, footer: list[str] | None = None) -> str:
    """TABLE (title, headers, cells) as an HTML table; FOOTER lines (plain text) below it."""
    console = Console(width=200, color_system="truecolor", file=None, force_jupyter=False)
    columns = table.columns
    rows = max((len(list(c.cells)) for c in columns), default=0)
    cells = [list(c.cells) for c in columns]
    out = ['<div class="edgekit-table">', '<table style="border-collapse: collapse">']
    if table.title:
        out.append(f'<caption style="text-align: left; font-weight: bold">{_cell(table.title, console)}</caption>')
    align = ["right" if c.justify == "right" else "left" for c in columns]
    out.append("<thead><tr>" + "".join(f'<th style="text-align: {a}">{_cell(c.header, console)}</th>'
                                       for c, a in zip(columns, align, strict=True)) + "</tr></thead><tbody>")
    for r in range(rows):
        out.append("<tr>" + "".join(f'<td style="text-align: {a}; white-space: nowrap">'
                                    f'{_cell(col[r], console) if r < len(col) else ""}</td>'
                                    for col, a in zip(cells, align, strict=True)) + "</tr>")
    out.append("</tbody></table>")
    out += [f"<div>{html.escape(line)}</div>" for line in footer or []]
    out.append("</div>")
    return "\n".join(out)


def table_text(table: Table, footer: list[str] | None = None, width: int = 160) -> str:
    """TABLE as plain text (no colours), as `print(result)` and a log show it; FOOTER lines below."""
    import io

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, highlight=False, force_terminal=False,
                      force_jupyter=False)
    console.print(table)
    for line in footer or []:
        console.print(line, markup=False)
    return buf.getvalue().rstrip("\n")


__all__ = ["table_html", "table_text"]
