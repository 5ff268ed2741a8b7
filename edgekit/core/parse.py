"""Parsers for the comma lists users type on the command line: shapes, numbers, names.

`--input-shape 1,3,224,224` (or `1x3x224x224`), `--mean 0.485,0.456,0.406`, `--runtime onnxruntime,litert`:
every command reads them the same way and refuses a bad value with the same UsageError (exit 2) and
an example, so one parser lives here. A leaf module: it imports only edgekit.core.errors.
"""

from __future__ import annotations

from edgekit.core.errors import UsageError


def _items(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_ints(value: str | None, what: str = "--input-shape", example: str = "1,1,28,28") -> list[int] | None:
    """"1,3,224,224" or "1x3x224x224" -> [1, 3, 224, 224]; None stays None; else UsageError naming WHAT."""
    if value is None:
        return None
    try:
        return [int(v) for v in _items(value.replace("x", ","))]
    except ValueError as exc:
        raise UsageError(f"{what} '{value}' is not a list of integers.", hint=f"For example: {what} {example}") from exc


def parse_floats(value: str | None, what: str, example: str = "0.485,0.456,0.406") -> list[float] | None:
    """"0.5,0.25" -> [0.5, 0.25]; None stays None; else UsageError naming WHAT."""
    if value is None:
        return None
    try:
        return [float(v) for v in _items(value)]
    except ValueError as exc:
        raise UsageError(f"{what} '{value}' is not a list of numbers.", hint=f"For example: {what} {example}") from exc


def parse_input_shapes(values: list[str] | str | None) -> tuple[list[int] | None, dict[str, list[int]] | None]:
    """--input-shape values: plain dims ("1,3,224,224") for a single-input model, or "name:dims" once per input.

    Returns (the plain shape or None, the shapes by input name or None).
    """
    if not values:
        return None, None
    items = [values] if isinstance(values, str) else list(values)
    plain: list[int] | None = None
    named: dict[str, list[int]] = {}
    for item in items:
        name, sep, dims = item.rpartition(":")
        if sep and name.strip():
            named[name.strip()] = parse_ints(dims, f"--input-shape {name.strip()}:", "1,3,224,224") or []
        elif plain is None:
            plain = parse_ints(item, "--input-shape")
        else:
            raise UsageError(f"--input-shape is given twice without input names ({', '.join(items)}).",
                             hint="For a model with several inputs name each: --input-shape image:1,3,224,224 "
                             "--input-shape mask:1,1,224,224")
    if plain is not None and named:
        raise UsageError("--input-shape mixes a plain shape with named ones.",
                         hint="Name every input (--input-shape name:dims), or give one plain shape.")
    return plain, named or None


def parse_names(value: str | None) -> list[str] | None:
    """"a, b,,c" -> ["a", "b", "c"]; None or "" -> None (meaning: not given)."""
    return _items(value) if value else None


__all__ = ["parse_floats", "parse_input_shapes", "parse_ints", "parse_names"]
