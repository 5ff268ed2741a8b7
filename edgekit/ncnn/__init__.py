"""ncnn's model files read without ncnn: the .param text (layers, blobs, shapes it gives) and the .bin beside it.

Used by the ncnn target (naming blobs after the source's tensors), the ncnn runtime (its I/O and the weights'
precision) and `edgekit inspect`. Imports nothing beyond edgekit.core, so it sits below all three.
"""
