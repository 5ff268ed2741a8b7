"""The errors edgekit raises on purpose, each with a message, a hint and an exit code.

The CLI (`edgekit.cli`) is the one place that turns these into "error: ... / hint: ..." and an
exit status. Everything else raises them; nothing else prints tracebacks for user mistakes.
What a vendor library raises is mapped to these at one border (`edgekit.core.border.vendor_errors`);
a bug in edgekit itself becomes InternalError (exit 1), never "bad input".
"""

from __future__ import annotations

# Exit codes, documented in README.md ("Exit codes"). CI scripts depend on them: never renumber.
EXIT_OK = 0
EXIT_INTERNAL = 1  # internal error: a bug in edgekit (the traceback is shown with EDGEKIT_DEBUG=1)
EXIT_USAGE = 2  # bad input: missing file, unknown option value, shape that does not fit
EXIT_MISSING = 3  # an optional dependency, runtime or piece of hardware is not present here
EXIT_CONVERSION = 4  # a conversion step failed
EXIT_FIDELITY = 5  # an artifact missed its fidelity thresholds and --strict was given
EXIT_RUNTIME = 6  # a runtime failed to load or run an artifact
EXIT_CHECK = 7  # a budget or baseline check found a regression
EXIT_PARTIAL = 8  # some artifacts failed (each recorded in the manifest); the others were validated and published
EXIT_NOT_COMPILED = 10  # Edge TPU model written and pre-flighted, but no edgetpu_compiler here


class EdgekitError(Exception):
    """Base of every deliberate edgekit error: a one-paragraph message and a hint to fix it."""

    exit_code: int = EXIT_INTERNAL

    def __init__(self, message: str, hint: str | None = None, *, step: str | None = None,
                 op: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.step = step  # the conversion step (or stage) it happened in, where known
        self.op = op  # the model op it is about, where known

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nhint: {self.hint}"


class InternalError(EdgekitError):
    """A bug in edgekit itself: not the user's input, not a vendor library failing on the model.

    Raised by `edgekit.core.border` for a programming error (TypeError, KeyError ...) whose innermost
    traceback frame is edgekit's code, and by the CLI for any exception that is not an EdgekitError.
    """

    exit_code = EXIT_INTERNAL


class UsageError(EdgekitError):
    """The user's input cannot be used as given (file, option, shape, name)."""

    exit_code = EXIT_USAGE


class UnsupportedModel(UsageError):
    """The model file is not a kind edgekit can load, or is refused for safety."""


class MissingDependency(EdgekitError):
    """An optional Python package or system library is not installed."""

    exit_code = EXIT_MISSING


class NotAvailable(EdgekitError):
    """Hardware or a runtime backend is not present on this machine."""

    exit_code = EXIT_MISSING


class ConversionError(EdgekitError):
    """A conversion step failed; the message names the step (and the op, where known)."""

    exit_code = EXIT_CONVERSION


class FidelityError(EdgekitError):
    """An artifact's outputs differ from the source model beyond the thresholds (--strict)."""

    exit_code = EXIT_FIDELITY
    # What the run made all the same (outputs and manifest are written before --strict raises): the pipeline's
    # ConvertResult, which the Python API replaces with its Conversion; None until one is attached.
    result: object | None = None


class RuntimeFailure(EdgekitError):
    """A runtime failed to load or run an artifact."""

    exit_code = EXIT_RUNTIME


class RuntimeCrash(RuntimeFailure):
    """The process running an artifact died of a signal (SIGILL, SIGSEGV, SIGABRT), rather than raising an error:
    an instruction the CPU lacks, or a native bug. What serve and profile fall past to the next runtime."""


