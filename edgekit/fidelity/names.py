"""Tensor names as converters mangle them, compared without the mangling.

Kept apart from matching.py (which imports the metrics and their numpy arithmetic) so that `edgekit
serve` can pair a .tflite's "serving_default_x:0" with the source's "x" by the same rule validation
uses, without importing anything of validation.
"""

from __future__ import annotations

import re

_PUNCT = re.compile(r"[^0-9a-z]+")


def normalized(name: str) -> str:
    """NAME without case, punctuation, a "serving_default_" prefix or a ":<n>" tensor suffix."""
    n = re.sub(r":\d+$", "", name.strip().lower())
    n = n.removeprefix("serving_default_")
    return _PUNCT.sub("_", n).strip("_")


__all__ = ["normalized"]
