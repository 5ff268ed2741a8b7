"""Task-aware fidelity: what kind each output is, how it is matched to the source's, how it is judged.

kinds.py holds the kinds and their thresholds (one table), matching.py pairs artifact outputs with
source outputs by name, metrics.py measures and judges one output. edgekit.validation.artifact runs artifacts
and uses all three. Nothing heavy is imported here.
"""
