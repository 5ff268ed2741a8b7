"""The server's log: one stderr stream for edgekit's serve loggers and uvicorn's, at `--log-level`.

A request that fails must leave a trace an operator can act on: one line per failed request (method,
path, status, model, reason) at warning for a 4xx and error for a 5xx, and for a 500 the traceback of
what raised, chained through the RequestError that answered it. The line is written once, by the
app's guard, which sees every answer (its own refusals, the routes', Starlette's 404s); the routes
leave the reason, the model and the exception in the request's scope for it.

Nothing from a request's body is logged: the path without its query, the status, the model and the
reason the client was given (which names fields, never values of tensors or pictures). Path and
reason are the client's text, so control characters are escaped (no forged log lines) and both are cut.

Each serve module logs through `logging.getLogger(__name__)` (under "edgekit.serve"); `configure` runs
once where the server starts. uvicorn's loggers go to the same stream at the same level, with its
access log (a line per request, failed or not) only at debug: below that the failed-request lines say
what matters, as before this log existed.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from http import HTTPStatus
from typing import IO, Any

LEVELS: dict[str, int] = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
                          "error": logging.ERROR}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SCOPE_KEY = "edgekit.failure"  # what a route leaves in the ASGI scope for the guard's line
_LOGGERS = ("edgekit", "uvicorn")
_MARK = "_edgekit_serve_handler"

log = logging.getLogger(__name__)


def check_level(name: str) -> str:
    """NAME as one of LEVELS (any case), or a UsageError with a "did you mean"."""
    from edgekit.core.registry import check_choice

    return check_choice(name, LEVELS, "log level (--log-level)")


def configure(level: str, stream: IO[str] | None = None) -> None:
    """Send edgekit's and uvicorn's records at LEVEL and above to STREAM (stderr); again: replaces, never adds."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    setattr(handler, _MARK, True)
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if getattr(h, _MARK, False)]:
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.setLevel(LEVELS[check_level(level)])
        logger.propagate = False  # one line per record, whatever the root logger has


def clean(text: str, limit: int = 300) -> str:
    """TEXT on one line, control characters escaped, cut to LIMIT characters."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def note(scope: MutableMapping[str, Any], *, reason: str | None = None, model: str | None = None,
         error: BaseException | None = None) -> None:
    """Leave REASON, MODEL and ERROR in the request's SCOPE for the guard's failed-request line."""
    found = scope.setdefault(SCOPE_KEY, {})
    found.update({k: v for k, v in (("reason", reason), ("model", model), ("error", error)) if v is not None})


def failed(scope: MutableMapping[str, Any], status: int, error: BaseException | None = None,
           logger: logging.Logger | None = None) -> None:
    """The one line for a request of SCOPE answered STATUS (>= 400), with the traceback of a 500, to LOGGER."""
    found = scope.get(SCOPE_KEY) or {}
    error = error or found.get("error")
    model = found.get("model") or (scope.get("path_params") or {}).get("name") or "-"
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    reason = found.get("reason") or phrase
    level = logging.ERROR if status >= 500 else logging.WARNING
    (logger or log).log(level, "%s %s %d model=%s: %s", clean(str(scope.get("method", "-")), 16),
            clean(str(scope.get("path", "")), 200), status, clean(str(model), 128), clean(str(reason), 500),
            exc_info=error if status == 500 and error is not None else None)


__all__ = ["FORMAT", "LEVELS", "check_level", "clean", "configure", "failed", "note"]
