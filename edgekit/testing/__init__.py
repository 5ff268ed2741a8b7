"""Helpers for edgekit's tests and benchmarks, kept out of the packages that ship features.

`tiny_cnn` writes one tiny CNN in every format a runtime loads. Nothing in edgekit's own code
paths imports this package; it is importable from an installed edgekit so `bench/` scripts and
users checking an install can build the same models the test suite uses.
"""
