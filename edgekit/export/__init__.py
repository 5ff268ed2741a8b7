"""Exports of converted artifacts for other serving stacks (a Triton model repository + KServe manifest)."""
