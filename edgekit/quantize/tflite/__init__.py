"""The TFLite half of int8: the TFLite quantizer and edgekit's recipes around it (ranges, equalization,
bias correction, mixed precision), their search, and running candidates in LiteRT."""
