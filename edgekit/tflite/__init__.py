"""TFLite models as data: reading a .tflite without TensorFlow (model.py), editing one (flatbuffer.py),
its calibration by LiteRT (calibrate.py) and the run's cache of float models and calibrations (cache.py)."""
