"""The one error a request can end in: an HTTP status, a message, and the request field it is about.

KServe v2 answers errors as `{"error": "<message>"}`; edgekit adds `"field"` (e.g. `inputs[0].shape`)
so a client can tell which part of its request to fix. Raised anywhere below the app; the app turns
it into the response, so no handler builds error bodies by hand.
"""

from __future__ import annotations

from typing import Any


class RequestError(Exception):
    """An HTTP error answer: STATUS, MESSAGE, and FIELD (the part of the request at fault) where known."""

    def __init__(self, status: int, message: str, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        d: dict[str, Any] = {"error": self.message}
        if self.field is not None:
            d["field"] = self.field
        return d


def bad_request(message: str, field: str | None = None) -> RequestError:
    return RequestError(400, message, field)


__all__ = ["RequestError", "bad_request"]
