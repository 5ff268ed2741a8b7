"""Data a conversion, a validation or a measurement reads: calibration and validation samples (images, arrays, the
bundled MNIST digits), below every layer that uses them (conversion, runtimes, quantize, emulate)."""
