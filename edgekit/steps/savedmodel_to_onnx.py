"""SavedModel signature -> ONNX (fp32) through tf2onnx, converting exactly the signature validated against.

The signature function is wrapped in a tf.function with one TensorSpec and handed to
tf2onnx.convert.from_function (see keras_to_onnx for why not the CLI or from_keras, and how
unconverted ops are caught). The batch stays as the signature has it: dynamic stays dynamic
(named "batch"), a static batch stays static. Output names are the signature's output keys.
"""

from __future__ import annotations

from typing import Any, ClassVar

from edgekit.core._deps import require
from edgekit.steps.base import Intermediate, Step, StepContext
from edgekit.steps.keras_to_onnx import tf_function_to_onnx
from edgekit.steps.keras_to_savedmodel import tf_name


class SavedModelToOnnx(Step):
    name: ClassVar[str] = "savedmodel_to_onnx"
    consumes: ClassVar[str] = "savedmodel"
    produces: ClassVar[str] = "onnx"
    modules: ClassVar[tuple[str, ...]] = ("tensorflow", "tf2onnx", "onnx")

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        from edgekit.sources.savedmodel import open_signature, signature_io

        tf = require("tensorflow", purpose="convert SavedModels to ONNX")
        folder = inp.path if inp.path is not None else ctx.source.path
        signature = inp.signature or ctx.source.signature or ctx.options.signature
        loaded, fn = open_signature(folder, signature)
        key, sig_spec, _ = signature_io(fn)
        sig_shape = sig_spec.shape.as_list()
        want = list(ctx.source.input_shape)
        # keep the signature's batch; fill unknown inner dims from the source's (user-given) shape
        shape = [sig_shape[0], *(d if d is not None else int(w) for d, w in zip(sig_shape[1:], want[1:],
                                                                                strict=True))]
        spec = tf.TensorSpec(shape, dtype=sig_spec.dtype, name=tf_name(key))

        @tf.function(input_signature=[spec])
        def forward(x: Any) -> Any:
            _ = loaded  # the signature's variables live as long as the loaded object
            y = fn(**{key: x})
            return dict(y) if isinstance(y, dict) else {"output_0": y}

        out = ctx.work / f"{ctx.stem}.fp32.onnx"
        opset = int(ctx.options.opset)
        batch = "dynamic" if shape[0] is None else shape[0]
        ctx.log(f"SavedModel '{signature}' -> ONNX (opset {opset}, batch {batch})")
        tf_function_to_onnx(forward, spec, opset, out, self.name)
        return inp.derive(kind="onnx", path=out, layout=inp.layout or ctx.source.layout, precision="fp32",
                          opset=opset, batch=batch, signature=signature)
