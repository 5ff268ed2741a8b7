"""Numbers as the tables show them: the one place that decides "-" for a missing figure and the units."""

from __future__ import annotations

from edgekit.core.console import human_bytes


def pct(v: float | None) -> str:
    """A fraction as a percentage with two decimals: 0.9712 -> 97.12%."""
    return "-" if v is None else f"{v:.2%}"


def num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def millijoules(joules: float | None) -> str:
    return "-" if joules is None else f"{joules * 1e3:.3f}"


def si(n: float) -> str:
    """N with a k/M/G prefix, three significant digits: 59264 -> 59.3 k."""
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g} {unit}"
    return f"{n:.0f}"


__all__ = ["human_bytes", "millijoules", "num", "pct", "si"]
