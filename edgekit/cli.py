"""The `edgekit` command line: thin. The one place that turns EdgekitError into text + exit code."""

from __future__ import annotations

import sys

import typer

from edgekit import __version__
from edgekit.commands import register_all
from edgekit.errors import EXIT_USAGE, EdgekitError

app = typer.Typer(
    name="edgekit",
    help="Convert, inspect, profile and gate CNNs for CPU, GPU, Coral Edge TPU and Cloud TPU.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"edgekit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Convert, inspect, profile and gate CNNs for CPU, GPU, Coral Edge TPU and Cloud TPU."""


register_all(app)


def report_error(exc: EdgekitError) -> None:
    from edgekit.console import err

    err.print(f"[bold red]error:[/bold red] {exc.message}", markup=True, highlight=False)
    if exc.hint:
        err.print(f"[bold]hint:[/bold] {exc.hint}", markup=True, highlight=False)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, map edgekit errors to their exit codes. Returns (and exits with) the code."""
    import click

    try:
        rv = app(args=argv, prog_name="edgekit", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except EdgekitError as exc:
        report_error(exc)
        code = exc.exit_code
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code if exc.exit_code else EXIT_USAGE
    except (click.exceptions.Abort, KeyboardInterrupt):
        sys.stderr.write("interrupted: no output was changed.\n")
        code = 130
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
