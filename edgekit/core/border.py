"""The border between edgekit and the libraries it drives: vendor exceptions in, edgekit errors out.

Why one border: torch, onnx, onnxruntime, onnx2tf, TensorFlow, Keras and tf2onnx raise anything on a
model they cannot handle (their own types, ValueError, RuntimeError, a TypeError from deep inside,
onnx2tf even calls sys.exit), often with messages that are empty, pages long or full of colour codes.
Like httpx's exception map at its transport border, each call into a vendor sits in one
`vendor_errors(...)` block that turns what the vendor raised into one of edgekit's errors, with the
step, the op where known, and a hint. Two rules keep it honest:

- An `EdgekitError` raised inside the block passes untouched: it was raised on purpose.
- A programming error (TypeError, AttributeError, KeyError, IndexError, NameError, AssertionError ...)
  is judged by where it was raised, read from the traceback: if the innermost frame is edgekit's own
  code, it is a bug in edgekit and becomes `InternalError` (exit 1, "this is a bug in edgekit"), never
  "fix your model"; if it is the vendor's code, the vendor failed on this model and it becomes the
  block's error (a conversion failure, never "bad input"), saying it is an internal error of that library.

Usage (as a context manager or a decorator)::

    with vendor_errors("onnxruntime", step="onnx_quantize", what="ONNX int8 conversion failed",
                       hint="Run with EDGEKIT_DEBUG=1 for the full error."):
        quantize_static(...)

`vendor_message(exc)` is the one formatter of a vendor exception's text for a user (empty, multi-line,
non-str, chained, coloured); `internal_error(exc)` builds the InternalError the CLI shows for a bug.
Nothing heavy is imported here: vendor exception types are named as "module:Name" and looked up only
in modules already loaded (an exception of a module never imported cannot have been raised).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Literal

from edgekit.core.errors import ConversionError, EdgekitError, InternalError
from edgekit.core.vendor import VENDORS, Vendor

MESSAGE_LIMIT = 400

# Exception types that mean "the code is wrong", not "the input is wrong". Where they were raised
# decides whose code: edgekit's (InternalError) or the vendor's (the vendor failed on this model).
PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    TypeError, AttributeError, LookupError, NameError, AssertionError, ZeroDivisionError,
)

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_MEANINGFUL = re.compile(r"[A-Za-z0-9]")
_NOISE = {"none", "traceback (most recent call last):"}
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])  # edgekit/: this file is in edgekit/core


def find_vendor(key: str | Vendor) -> Vendor:
    """The Vendor named KEY: a VENDORS line, else a library of a format's record; a Vendor passes through."""
    if isinstance(key, Vendor):
        return key
    if key in VENDORS:
        return VENDORS[key]
    from edgekit.core.formats import libraries

    found = libraries()
    if key in found:
        return found[key]
    raise KeyError(f"unknown vendor {key!r}; known: {', '.join(sorted({*VENDORS, *found}))}")


# --- the one formatter of vendor messages --------------------------------------------------------
def _text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # a vendor __str__ that itself fails: fall back to its args
        try:
            text = " ".join(repr(a) for a in exc.args)
        except Exception:
            text = ""
    return _ARRAY_DUMP.sub("[...]", _ANSI.sub("", text))


# A printed numpy/TF array of 40+ characters (it may span lines): TensorFlow quotes whole tensors in its errors
# (onnx2tf on MobileViT: 144 "1." in two copies before the words that say what is wrong).
_ARRAY_DUMP = re.compile(r"\[[\d\s.,eE+\-]{40,}\]")


def _lines(exc: BaseException) -> list[str]:
    return [ln.strip() for ln in _text(exc).splitlines() if _MEANINGFUL.search(ln) and ln.strip().lower() not in
            _NOISE]


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:max(1, limit - 3)].rstrip() + "..."


def chain(exc: BaseException, depth: int = 10) -> list[BaseException]:
    """EXC and the exceptions behind it (__cause__, else __context__), outermost first, without cycles."""
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(out) < depth and all(cur is not seen for seen in out):
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def vendor_message(exc: BaseException, limit: int = MESSAGE_LIMIT, *, last: bool = False) -> str:
    """One line that says what EXC was about, fit for a user.

    The first (or, with LAST, the last) meaningful line of the message, with ANSI colour codes removed;
    an exception with an empty message is looked through (its __cause__ / __context__) for the first
    informative one; when none has any text, the exception's type name. Capped at LIMIT characters.
    """
    for cur in chain(exc):
        lines = _lines(cur)
        if lines:
            return _cap(lines[-1] if last else lines[0], limit)
    return type(exc).__name__


# Lines that wrap a cause rather than state it: Keras's layer-call wrapper, its argument dump, tracebacks
_WRAPPERS = ("exception encountered when calling", "call arguments received", "arguments received", "•",
             "traceback", "during handling of the above exception", "the above exception was the direct cause")
# TensorFlow appends the whole node to a shape error: "... for '{{node conv}} = Conv2D[T=DT_FLOAT, ...](a, b)'"
_TF_NODE = re.compile(r" for '\{\{node [^']*'")


def vendor_cause(exc: BaseException, limit: int = MESSAGE_LIMIT) -> str:
    """The line of EXC's messages that says what went wrong, fit for a user.

    Like `vendor_message`, but wrapper lines are passed over (Keras's "Exception encountered when
    calling layer ...", "Call arguments received ...", tracebacks), so a TensorFlow error wrapped by
    Keras or onnx2tf is named by TensorFlow's own line, with the dump of the graph node cut out.
    """
    for cur in chain(exc):
        lines = [ln for ln in _lines(cur) if not ln.lower().startswith(_WRAPPERS)]
        if lines:
            return _cap(_TF_NODE.sub("", lines[0]), limit)
    return vendor_message(exc, limit)


def all_text(exc: BaseException) -> str:
    """Every message of EXC's chain, ANSI removed: for searching an op name or a log line in."""
    return "\n".join(_text(e) for e in chain(exc))


# --- where an exception was raised ---------------------------------------------------------------
def _innermost(exc: BaseException) -> TracebackType | None:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def _in_edgekit(tb: TracebackType) -> bool:
    name = tb.tb_frame.f_globals.get("__name__")
    if isinstance(name, str) and name:
        return name == "edgekit" or name.startswith("edgekit.")
    return str(Path(tb.tb_frame.f_code.co_filename).resolve()).startswith(_PACKAGE_DIR)


def raised_in_edgekit(exc: BaseException) -> bool:
    """True when the innermost frame of EXC's traceback is edgekit's own code."""
    tb = _innermost(exc)
    return tb is not None and _in_edgekit(tb)


def is_edgekit_bug(exc: BaseException) -> bool:
    """True for a programming error (TypeError, KeyError ...) raised in edgekit's own code.

    For places that catch a vendor's failures into something other than an EdgekitError (a sensor
    that reports itself unavailable): re-raise when this is true, so a bug is not taken for absence.
    """
    if isinstance(exc, ImportError) and not isinstance(exc, ModuleNotFoundError):
        # "cannot import name 'x' from 'edgekit.y'": edgekit's own modules disagree (a missing optional
        # dependency is a ModuleNotFoundError, and names a vendor's module)
        return (exc.name or "").split(".")[0] == "edgekit" and raised_in_edgekit(exc)
    return isinstance(exc, PROGRAMMING_ERRORS) and raised_in_edgekit(exc)


def where(exc: BaseException) -> str | None:
    """"edgekit/x.py:12 (func)" for the innermost frame of EXC's traceback, or None without one."""
    tb = _innermost(exc)
    if tb is None:
        return None
    code = tb.tb_frame.f_code
    path = Path(code.co_filename)
    with contextlib.suppress(ValueError):
        path = path.resolve().relative_to(Path(_PACKAGE_DIR).parent)
    return f"{path.as_posix()}:{tb.tb_lineno} ({code.co_name})"


def internal_error(exc: BaseException, step: str | None = None) -> InternalError:
    """The InternalError for EXC, a bug in edgekit: what, where, and how to report it."""
    at = where(exc)
    during = f", during step {step}" if step else ""
    return InternalError(
        f"{type(exc).__name__}: {vendor_message(exc)}{f' at {at}' if at else ''}{during}. "
        "This is a bug in edgekit, not a problem with your model or options.",
        hint="Re-run with EDGEKIT_DEBUG=1 to see the traceback, and report it to the edgekit maintainers "
        "with that output.",
        step=step,
    )


# --- the border -----------------------------------------------------------------------------------
def _resolve(names: tuple[str, ...]) -> tuple[type[BaseException], ...]:
    """The exception types named "module:QualName" whose module is already imported."""
    found: list[type[BaseException]] = []
    for spec in names:
        module, _, qual = spec.partition(":")
        obj: object = sys.modules.get(module)
        for part in qual.split("."):
            obj = getattr(obj, part, None)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            found.append(obj)
    return tuple(found)


class vendor_errors(contextlib.ContextDecorator):  # noqa: N801 - used like contextlib's context managers
    """Map what VENDOR raises inside the block to edgekit's errors (see the module docstring).

    vendor: a key of VENDORS or of a format's libraries, or a Vendor (its label names the library in messages).
    step: the conversion step (or other stage) the block belongs to; kept on the error.
    error: the EdgekitError class vendor failures become (ConversionError for steps, UnsupportedModel or
        UsageError for sources, RuntimeFailure for runtimes).
    what: the message's opening ("ONNX int8 conversion failed"); default "<label> failed". The step is
        added as " (step X)" unless WHAT already names it; then ": " and the detail.
    hint: the hint of the mapped error, or EXC -> that hint (when it depends on what was raised).
    describe: EXC -> the detail text, or None for `vendor_message(exc)` (e.g. the op named in a log).
    op: EXC -> the op the failure is about, or None; kept on the error.
    errors: per-type overrides {type or "module:Name": EdgekitError class}, first match wins (e.g.
        {OSError: UsageError} where an unreadable file is the user's input).
    """

    def __init__(self, vendor: str | Vendor, *, step: str | None = None, error: type[EdgekitError] = ConversionError,
                 what: str | None = None, hint: str | Callable[[BaseException], str | None] | None = None,
                 describe: Callable[[BaseException], str | None] | None = None,
                 op: Callable[[BaseException], str | None] | None = None,
                 errors: Mapping[type[BaseException] | str, type[EdgekitError]] | None = None) -> None:
        self.vendor = find_vendor(vendor)
        self.step, self.error, self.what, self.hint = step, error, what, hint
        self.describe, self.op, self.errors = describe, op, dict(errors or {})

    def __enter__(self) -> vendor_errors:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if exc is None or isinstance(exc, EdgekitError):
            return False
        mapped = self.map(exc)
        if mapped is None:
            return False
        raise mapped from exc

    def map(self, exc: BaseException) -> EdgekitError | None:
        """The edgekit error for EXC, or None when it must pass unchanged (KeyboardInterrupt, our own errors)."""
        if isinstance(exc, EdgekitError):
            return None
        known = _resolve(self.vendor.raises)
        if not isinstance(exc, Exception):  # SystemExit, KeyboardInterrupt, GeneratorExit
            if not (isinstance(exc, known) or self.vendor.exits and isinstance(exc, SystemExit)):
                return None
        elif is_edgekit_bug(exc) and not isinstance(exc, known):
            return internal_error(exc, self.step)
        detail = self.describe(exc) if self.describe else None
        if detail is None:
            detail = vendor_message(exc)
            if isinstance(exc, PROGRAMMING_ERRORS) and not isinstance(exc, known):
                detail = (f"{self.vendor.label} failed with an internal error of that library "
                          f"({type(exc).__name__}: {detail})")
        what = self.what or f"{self.vendor.label} failed"
        if self.step and self.step not in what:
            what = f"{what} (step {self.step})"
        cls = self._class_for(exc)
        hint = self.hint(exc) if callable(self.hint) else self.hint
        return cls(f"{what}: {detail}", hint=hint, step=self.step, op=self.op(exc) if self.op else None)

    def _class_for(self, exc: BaseException) -> type[EdgekitError]:
        for key, cls in self.errors.items():
            types = _resolve((key,)) if isinstance(key, str) else (key,)
            if types and isinstance(exc, types):
                return cls
        return self.error
