"""Progress for the Python API: a live display where someone watches, plain lines in a log, nothing when quiet.

The conversion, profile and bench report progress as one-line messages (`say("[2/5] onnx_quantize ...")`),
the same messages `edgekit convert` prints. Here they go:
- to a terminal, or a Jupyter notebook with ipywidgets: rich's live display, a bar over the run's steps
  (counted from the "[i/N]" and "bench i/N" messages) under the lines printed so far;
- to a CI log or a file (stderr is no terminal): the CLI's plain "> message" lines (edgekit.core.console);
- nowhere with `quiet=True`.

The live display is redrawn only when a message arrives, never from a timer thread: the conversion captures
the converters' output at the file-descriptor level while a step runs, and a redraw from another thread
then would land in that capture.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from typing import Any

from rich.markup import escape

Say = Callable[[str], None]
# "[2/5] onnx_quantize ..." / "[2/5] onnx_quantize done in 0.1s" (convert), "bench 3/7: onnx int8 on ..." (bench)
_STEP = re.compile(r"^(?:\[(\d+)/(\d+)\] |bench (\d+)/(\d+): )")


def _live_capable(console: Any) -> bool:
    """A terminal, or a notebook that can show rich's live display (which needs ipywidgets there)."""
    if console.is_jupyter:
        from edgekit.core._deps import available

        return available("ipywidgets")
    return bool(console.is_terminal) and not console.is_dumb_terminal


class _Live:
    """Messages printed above a bar that counts the run's steps and shows the latest message."""

    def __init__(self, console: Any, title: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(SpinnerColumn(), TextColumn("[bold]{task.fields[title]}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
                                 console=console, auto_refresh=False, transient=True)
        self.task = self.progress.add_task("", total=None, title=title)

    def __call__(self, message: str) -> None:
        step = _STEP.match(message)
        if step:
            done, total = (int(g) for g in (step.group(1, 2) if step.group(1) else step.group(3, 4)))
            finished = bool(step.group(1)) and not message.rstrip().endswith("...")  # a bench row is starting
            self.progress.update(self.task, total=total, completed=done if finished else done - 1)
        self.progress.console.print(f"[dim]>[/dim] {escape(message)}", highlight=False)
        self.progress.update(self.task, description=escape(message[:80]))
        self.progress.refresh()


@contextlib.contextmanager
def reporter(quiet: bool = False, title: str = "edgekit") -> Iterator[Say]:
    """The `say` function for one API call: live, plain lines, or silent (QUIET)."""
    if quiet:
        yield lambda _message: None
        return
    from edgekit.core.console import err, progress

    if not _live_capable(err):
        yield progress
        return
    live = _Live(err, title)
    with live.progress:
        yield live


__all__ = ["Say", "reporter"]
