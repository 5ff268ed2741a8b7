"""The ONNX half of int8: onnxruntime's quantizer and edgekit's recipes around it (calibration
statistics, equalization, bias correction, mixed precision), their search and diagnosis."""
