"""The `edgekit` command line: thin. The one place that turns EdgekitError into text + exit code."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import typer

from edgekit._version import __version__
from edgekit.commands import register_all
from edgekit.commands.declared import command
from edgekit.core.errors import EXIT_USAGE, EdgekitError, InternalError
from edgekit.core.option_field import option

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


@dataclass
class RootOptions:
    """The options `edgekit` itself takes, before a command."""

    version: bool = option(False, "Print the version.", flags=("--version",), callback=_version, eager=True)
    verbose: bool = option(False, "Show the libraries' own log lines (TensorFlow, absl, LiteRT, onnx2tf), hidden by "
                           "default; EDGEKIT_DEBUG=1 also shows tracebacks.", flags=("--verbose", "-v"))


@command(app.callback, RootOptions)
def _root(o: RootOptions) -> None:
    """Convert, inspect, profile and gate CNNs for CPU, GPU, Coral Edge TPU and Cloud TPU."""
    if o.verbose:
        import os

        from edgekit.core.vendorlog import release_vendor_logs

        os.environ["EDGEKIT_VERBOSE"] = "1"  # child processes and steps see it too
        release_vendor_logs()


register_all(app)


def report_error(exc: EdgekitError) -> None:
    from rich.markup import escape

    from edgekit.core.console import err

    label = "internal error" if isinstance(exc, InternalError) else "error"
    # escape: messages hold things like 'edgekit[convert]' that rich would take for markup
    err.print(f"[bold red]{label}:[/bold red] {escape(exc.message)}", markup=True, highlight=False)
    if exc.hint:
        err.print(f"[bold]hint:[/bold] {escape(exc.hint)}", markup=True, highlight=False)


def _report(error: EdgekitError, raised: BaseException) -> int:
    """Show ERROR (and, with EDGEKIT_DEBUG, the traceback of what was RAISED); its exit code."""
    import os

    if os.environ.get("EDGEKIT_DEBUG"):
        import traceback

        traceback.print_exception(raised)
    report_error(error)
    return error.exit_code


def _interrupted() -> int:
    """Say what a Ctrl-C left behind; its exit code."""
    sys.stderr.write("interrupted: outputs of earlier runs were left as they were.\n")
    sys.stderr.flush()
    return 130


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, map edgekit errors to their exit codes. Returns (and exits with) the code."""
    import os

    # TensorFlow's C++ INFO/WARNING lines (CUDA probing, absl) drown the progress lines; errors still show.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if argv is None:  # the real command line (not a test calling main): vendor log lines off the terminal
        from edgekit.core.vendorlog import quiet_vendor_logs

        quiet_vendor_logs()
    if not os.environ.get("EDGEKIT_DEBUG"):
        import warnings

        # the frameworks' deprecation chatter is about their internals, not the user's model
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
    try:
        rv = app(args=argv, prog_name="edgekit", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
        if code == 130:  # typer (non-standalone) turns a Ctrl-C into a silent return of 130; no command returns it
            code = _interrupted()
    except EdgekitError as exc:
        code = _report(exc, exc)
    except typer.Exit as exc:
        code = exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        code = _interrupted()
    except Exception as exc:
        # usage errors of typer's (vendored) click: they know how to show themselves
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            code = exc.exit_code or EXIT_USAGE
        else:  # anything else is a bug in edgekit: say so cleanly, exit 1, traceback only with EDGEKIT_DEBUG
            from edgekit.core.border import internal_error

            code = _report(internal_error(exc), exc)
    if argv is None:
        from edgekit.core.vendorlog import release_vendor_logs

        release_vendor_logs()
        sys.exit(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
