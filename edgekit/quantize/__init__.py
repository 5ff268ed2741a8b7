"""int8 recovery (issue 9): when plain post-training int8 misses its thresholds, find out why and fix it.

- recipes, each a small class or function with a declared config: cross-layer equalization with bias
  absorption (`equalize`, `tflite_equalize`), bias correction (`bias_correct`), the calibration statistic
  and mixed precision (`onnx_recipes`, `tflite_recipes`);
- the search `--int8-recipe auto` runs: one driver for every format (`driver`: the order, judging, what is kept,
  the records, --int8-budget), each format's candidates (`onnx.search`, `tflite.search`, `openvino`), the shared
  judging and mixed-precision helpers (`search`);
- the layer-by-layer diagnosis (`diagnose`, `diagnose_onnx`, the TFLite debugger in `tflite_recipes`),
  attached after validation by `explain`;
- the records that go into the manifest (`records`).

Nothing here imports onnx, onnxruntime or TensorFlow at module level.
"""
