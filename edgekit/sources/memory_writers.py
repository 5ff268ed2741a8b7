"""One writer per kind of in-memory model: the object -> the file form the file route reads (issue 32).

- a torch.nn.Module: `torch.export.export(module, example_inputs)` in eval mode (its training flag is put
  back after), saved with `torch.export.save` as `<name>.pt2`: the ExportedProgram, no pickled classes;
- a torch.export.ExportedProgram: `torch.export.save` as it is;
- a Keras model (Keras 3, or tf_keras): `model.save("<name>.keras")`, the archive the Keras loader reads
  in safe mode (a Lambda layer needs trust_model=True there, as for the file);
- a tf.Module, tf.function or concrete function: `tf.saved_model.save` with the one signature, as the
  folder `<name>/` (a SavedModel), its captured variables tracked by the saved object;
- an onnx.ModelProto: `onnx.save_model` as `<name>.onnx` (a model over 2 GB with its weights beside it).

Each writes into the staging folder edgekit.sources.memory gives it; that module publishes the folder.
Every framework call sits inside a vendor border: a module torch.export cannot trace is a conversion
failure (exit 4) naming the library, never a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from edgekit.core._deps import require, version_of
from edgekit.core.border import vendor_errors
from edgekit.core.errors import ConversionError, UsageError
from edgekit.sources.memory import ExampleInput, Written

_ONNX_PROTOBUF_LIMIT = 2**31 - 1  # protobuf's limit: a bigger model keeps its weights in a file beside it


def _shape_words(shape: Any) -> str:
    return "x".join(str(d) for d in shape)


def _torch_args(torch: Any, example_inputs: Any, input_shape: list[int] | None) -> tuple[tuple[Any, ...], bool]:
    """(the positional example inputs, whether INPUT_SHAPE made them) for torch.export."""
    if example_inputs is None and input_shape:  # one of the two: memory.check_inputs refused neither
        return (torch.zeros([int(d) for d in input_shape], dtype=torch.float32),), True
    items = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    args = []
    for x in items:
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(np.ascontiguousarray(x))
        if not isinstance(x, torch.Tensor):
            raise UsageError(f"example_inputs holds a {type(x).__name__}.",
                             hint="Pass a torch tensor or numpy array, or a tuple of them (one per argument of "
                             "forward()).")
        args.append(x)
    if input_shape and args and list(args[0].shape) != [int(d) for d in input_shape]:
        raise UsageError(f"input_shape={_shape_words(input_shape)} does not match example_inputs, of shape "
                         f"{_shape_words(args[0].shape)}.", hint="Pass one of the two.")
    return tuple(args), False


def _examples(tensors: Any) -> list[ExampleInput]:
    return [ExampleInput(shape=[int(d) for d in t.shape], dtype=str(t.dtype).replace("torch.", "").replace(
        "<dtype: '", "").rstrip("'>")) for t in tensors]


def _save_exported(torch: Any, program: Any, folder: Path, name: str) -> str:
    with vendor_errors("torch", error=ConversionError, what="torch.export.save could not write the ExportedProgram"):
        torch.export.save(program, str(folder / f"{name}.pt2"))
    return f"{name}.pt2"


def write_torch_module(model: Any, folder: Path, name: str, example_inputs: Any, input_shape: list[int] | None,
                       signature: str) -> Written:
    torch = require("torch", purpose="export a torch.nn.Module")
    args, consumed = _torch_args(torch, example_inputs, input_shape)
    training = model.training
    model.eval()  # what is converted is the inference graph: dropout off, batch norm on its running statistics
    try:
        with vendor_errors("torch", error=ConversionError, what="torch.export could not export the module",
                           hint="edgekit exports with torch.export.export(module.eval(), example_inputs): check that "
                           "forward() runs on example_inputs, or export it yourself and pass the ExportedProgram."):
            program = torch.export.export(model, args)
    finally:
        model.train(training)
    return Written(name=_save_exported(torch, program, folder, name), example_inputs=_examples(args),
                   how="torch.export.export(module.eval(), example_inputs), torch.export.save",
                   framework_version=version_of("torch"), consumed_input_shape=consumed)


def write_exported_program(program: Any, folder: Path, name: str, example_inputs: Any,
                           input_shape: list[int] | None, signature: str) -> Written:
    torch = require("torch", purpose="save a torch.export ExportedProgram")
    user = set(program.graph_signature.user_inputs)
    vals = [n.meta.get("val") for n in program.graph.nodes if n.op == "placeholder" and n.name in user]
    return Written(name=_save_exported(torch, program, folder, name), how="torch.export.save",
                   example_inputs=_examples([v for v in vals if v is not None]), framework_version=version_of("torch"))


def write_keras(model: Any, folder: Path, name: str, example_inputs: Any, input_shape: list[int] | None,
                signature: str) -> Written:
    with vendor_errors("keras", error=ConversionError, what="Keras could not save the model",
                       hint="edgekit saves the model with model.save('model.keras'); a subclassed model needs "
                       "get_config() for that."):
        model.save(str(folder / f"{name}.keras"))
    dist = "tf-keras" if type(model).__module__.startswith("tf_keras") else "keras"
    return Written(name=f"{name}.keras", how="model.save(.keras)", framework_version=version_of(dist))


def _concrete(tf: Any, model: Any, kind: str, example_inputs: Any, input_shape: list[int] | None) -> tuple[Any, bool]:
    """(the concrete function to save as the signature, whether INPUT_SHAPE made its input spec)."""
    fn = (model.__call__ if callable(model) else None) if kind == "tf-module" else model
    if kind == "tf-function" and hasattr(fn, "structured_input_signature") and not hasattr(fn, "input_signature"):
        return fn, False  # already a concrete function
    if fn is None or not hasattr(fn, "get_concrete_function"):
        raise UsageError(f"The {type(model).__name__} has no @tf.function __call__ to save as its signature.",
                         hint="Decorate __call__ with @tf.function(input_signature=[tf.TensorSpec(shape, "
                         "tf.float32)]), or pass the concrete function: module.__call__.get_concrete_function(spec).")
    if getattr(fn, "input_signature", None):
        return fn.get_concrete_function(), False
    if example_inputs is not None:
        items = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
        specs = [tf.TensorSpec(np.shape(x), tf.as_dtype(np.asarray(x).dtype)) for x in items]
        return fn.get_concrete_function(*specs), False
    if input_shape:
        return fn.get_concrete_function(tf.TensorSpec([int(d) for d in input_shape], tf.float32)), True
    raise UsageError("This tf.function has no input_signature, so its input shape is unknown.",
                     hint="Pass input_shape=(1, 224, 224, 3) or example_inputs=, or give the tf.function an "
                     "input_signature.")


def write_tf(model: Any, folder: Path, name: str, example_inputs: Any, input_shape: list[int] | None,
             signature: str, kind: str) -> Written:
    tf = require("tensorflow", purpose="save a TensorFlow module as a SavedModel")
    with vendor_errors("tensorflow", error=ConversionError, what="TensorFlow could not save the model as a SavedModel",
                       hint="edgekit saves it with tf.saved_model.save(obj, path, signatures={...}); check that the "
                       "function runs on the input shape given."):
        fn, consumed = _concrete(tf, model, kind, example_inputs, input_shape)
        root = model if kind == "tf-module" else tf.Module()
        if kind != "tf-module":
            root.captured = list(fn.variables)  # tracked by the saved object, so the signature can restore them
        tf.saved_model.save(root, str(folder / name), signatures={signature: fn})
        specs = [s for s in tf.nest.flatten(fn.structured_input_signature) if isinstance(s, tf.TensorSpec)]
    return Written(name=name, how="tf.saved_model.save(signatures={" + repr(signature) + ": concrete function})",
                   example_inputs=[ExampleInput(shape=[-1 if d is None else int(d) for d in s.shape],
                                                dtype=s.dtype.name) for s in specs],
                   framework_version=version_of("tensorflow"), consumed_input_shape=consumed)


def write_onnx(model: Any, folder: Path, name: str, example_inputs: Any, input_shape: list[int] | None,
               signature: str) -> Written:
    onnx = require("onnx", purpose="save an onnx.ModelProto")
    big = model.ByteSize() > _ONNX_PROTOBUF_LIMIT
    with vendor_errors("onnx", error=ConversionError, what="onnx could not save the ModelProto"):
        onnx.save_model(model, str(folder / f"{name}.onnx"), save_as_external_data=big,
                        location=f"{name}.onnx.data" if big else None)
    return Written(name=f"{name}.onnx", how="onnx.save_model", framework_version=version_of("onnx"))


def write_tf_module(model: Any, folder: Path, name: str, example_inputs: Any, input_shape: list[int] | None,
                    signature: str) -> Written:
    return write_tf(model, folder, name, example_inputs, input_shape, signature, "tf-module")


def write_tf_function(model: Any, folder: Path, name: str, example_inputs: Any, input_shape: list[int] | None,
                      signature: str) -> Written:
    return write_tf(model, folder, name, example_inputs, input_shape, signature, "tf-function")


__all__ = ["write_exported_program", "write_keras", "write_onnx", "write_tf", "write_tf_function", "write_tf_module",
           "write_torch_module"]
