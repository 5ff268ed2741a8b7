"""onnx2tf's failure is reported by the node it names and the error it raised, not its generic closing advice."""

from __future__ import annotations

from edgekit.steps.onnx_to_savedmodel import _unsupported_op, failed_op

# What onnx2tf 1.28.8 prints on a failing node (utils/common_functions.py print_node_info), colours included
LOG = (
    "\x1b[32mINFO:\x1b[0m onnx_op_type: Mul onnx_op_name: /stages.0/Mul_1\n"
    "\x1b[31mERROR:\x1b[0m The trace log is below.\n"
    "Traceback (most recent call last):\n  ...\nValueError: Dimensions must be equal, but are 40 and 96\n"
    "\x1b[31mERROR:\x1b[0m input_onnx_file_path: /tmp/x/m.onnx2tf-input.onnx\n"
    "\x1b[31mERROR:\x1b[0m onnx_op_name: /stages.0/Mul_1\n"
    "\x1b[31mERROR:\x1b[0m Read this and deal with it. https://github.com/PINTO0309/onnx2tf#parameter-replacement\n"
    "\x1b[31mERROR:\x1b[0m Alternatively, if the input OP has a dynamic dimension, use the -b or -ois option to "
    "rewrite it to a static shape and try again.\n"
    "\x1b[31mERROR:\x1b[0m Also, for models that include NonMaxSuppression in the post-processing, try the -onwdt "
    "option.\n"
)


def test_the_message_names_the_node_and_the_raised_error() -> None:
    msg = _unsupported_op(LOG, ValueError("Dimensions must be equal, but are 40 and 96"))
    assert msg == "at ONNX node /stages.0/Mul_1 (Mul): Dimensions must be equal, but are 40 and 96"
    assert "\x1b" not in msg and "onwdt" not in msg
    assert failed_op(LOG) == "/stages.0/Mul_1"


def test_an_exit_without_a_node_keeps_the_last_specific_error_line() -> None:
    log = ("\x1b[31mERROR:\x1b[0m The op Einsum is not supported.\n"
           "\x1b[31mERROR:\x1b[0m Also, for models that include NonMaxSuppression in the post-processing, try the "
           "-onwdt option.\n")
    assert _unsupported_op(log, SystemExit(1)) == "ERROR: The op Einsum is not supported."
    assert _unsupported_op("", ValueError("")) == "ValueError"


def test_a_shape_disagreement_inside_onnx2tf_gets_the_lost_layout_hint() -> None:
    """MobileViT: onnx2tf applied a LayerNormalization to the wrong axis after the patch reshape."""
    from edgekit.steps.onnx_to_savedmodel import _hint

    exc = TypeError("Eager execution of tf.constant with unsupported shape. Tensor [...] has 144 elements, but got "
                    "`shape` (100,) with 100 elements).")
    assert "lost track of this tensor's axes" in _hint(exc, "NCHW")
    assert "--layout NHWC" in _hint(ValueError("input depth must be evenly divisible by filter depth"), "NCHW")
    assert _hint(ValueError("something else"), "NCHW").startswith("Run with --verbose")
