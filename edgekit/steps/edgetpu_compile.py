"""Step: full-integer int8 .tflite -> Edge TPU model (pre-flight, then edgetpu_compiler where present).

"Not compiled" is not an error here: without edgetpu_compiler the step still returns the Edge
TPU-ready int8 model with its pre-flight report and the exact way to finish (`how_to_finish`), and
the pipeline turns `meta["edgetpu"]["compiled"] == False` into exit code 10 (EXIT_NOT_COMPILED).
A compiler that runs and fails, or times out, is a ConversionError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from edgekit.errors import ConversionError, NotAvailable
from edgekit.fsutil import publish
from edgekit.steps.base import Intermediate, Step, StepContext


class EdgeTpuCompile(Step):
    name: ClassVar[str] = "edgetpu_compile"
    consumes: ClassVar[str] = "tflite"
    produces: ClassVar[str] = "edgetpu"
    modules: ClassVar[tuple[str, ...]] = ("ai_edge_litert",)  # the flatbuffer schema for the pre-flight

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        from edgekit.edgetpu import compare, compile_model, how_to_finish, preflight

        if inp.path is None or not inp.path.is_file():
            raise ConversionError("edgetpu_compile: the int8 .tflite it should compile was not written.")
        if inp.precision != "int8":
            raise ConversionError(
                f"edgetpu_compile needs a full-integer int8 .tflite, but got a {inp.precision} one ({inp.path.name}).",
                hint="The Edge TPU runs only int8 models: convert with --quantize int8 and calibration data (--calib).",
            )
        opts = ctx.options
        min_rt = int(opts.edgetpu_min_runtime) if opts.edgetpu_min_runtime else None
        pf = preflight(inp.path, min_runtime=min_rt)
        ctx.log(f"Edge TPU pre-flight: {pf['summary']}")

        report: dict[str, Any] | None = None
        compiled_path = None
        finish: str | None = None
        disagreements: list[str] = []
        try:
            result = compile_model(
                inp.path,
                ctx.work,
                compiler=opts.edgetpu_compiler,
                min_runtime_version=min_rt,
                timeout=float(opts.edgetpu_timeout),
            )
        except NotAvailable as exc:
            finish = exc.hint or how_to_finish(inp.path.name, min_rt)
            ctx.log("edgetpu_compiler not found: the int8 model is Edge TPU-ready but not compiled.")
        else:
            report = result["report"]
            # named after the run's stem, the log beside the model (<stem>_edgetpu.tflite / .log)
            compiled_path = ctx.work / f"{ctx.stem}_edgetpu.tflite"
            log_path = compiled_path.with_suffix(".log")
            if Path(result["compiled_path"]) != compiled_path:
                publish(Path(result["compiled_path"]), compiled_path)
            if Path(result["log_path"]) != log_path:
                publish(Path(result["log_path"]), log_path)
            report["log_path"] = log_path.name
            report["seconds"] = result["seconds"]
            disagreements = compare(pf, report)
            for d in disagreements:
                ctx.log(f"pre-flight vs compiler: {d}")

        edgetpu = {
            **pf,
            "compiled": compiled_path is not None,
            "compiler": report,
            "disagreements": disagreements,
            "how_to_finish": finish,
        }
        return Intermediate(
            kind="edgetpu",
            path=compiled_path,
            layout=inp.layout,
            precision="int8",
            meta={**inp.meta, "edgetpu": edgetpu, "ready_model": inp.path},
        )
