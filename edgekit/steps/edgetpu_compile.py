"""Step: full-integer int8 .tflite -> Edge TPU model (pre-flight, then edgetpu_compiler where present).

A post-step of the Edge TPU target (edgekit.targets.edgetpu): it works on the int8 model once that
has been validated. "Not compiled" is not an error here: without edgetpu_compiler the step returns
no file (path None) but its pre-flight report, and the run says how to finish on a machine with a
compiler (`how_to_finish`) and exits 10 (EXIT_NOT_COMPILED). A compiler that runs and fails, or
times out, is a ConversionError. Its option values are checked before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from edgekit.core.border import vendor_errors
from edgekit.core.errors import ConversionError, NotAvailable, UsageError
from edgekit.core.flags import edgetpu_runtime
from edgekit.core.fsutil import publish
from edgekit.steps.base import Intermediate, Step, StepContext

if TYPE_CHECKING:  # steps read the options conversion hands them; conversion imports the steps
    from edgekit.conversion.options import ConvertOptions


def min_runtime(options: ConvertOptions) -> int | None:
    """--edgetpu-min-runtime as an integer (the API may hand it over unparsed), or UsageError naming the values that
    work: the flag's one parser (edgekit.core.flags), as `edgekit inspect` reads it."""
    return edgetpu_runtime(options.edgetpu_min_runtime)


class EdgeTpuCompile(Step):
    name: ClassVar[str] = "edgetpu_compile"
    consumes: ClassVar[str] = "tflite"
    produces: ClassVar[str] = "edgetpu"
    modules: ClassVar[tuple[str, ...]] = ("ai_edge_litert",)  # the flatbuffer schema for the pre-flight

    def outputs(self, stem: str) -> list[str]:
        return [f"{stem}_edgetpu.tflite", f"{stem}_edgetpu.log"]  # what the compiler writes, where it runs

    @classmethod
    def check_options(cls, options: ConvertOptions) -> None:
        min_runtime(options)
        if options.edgetpu_compiler is not None and not str(options.edgetpu_compiler).strip():
            raise UsageError("--edgetpu-compiler is empty.", hint="Pass the compiler's path, or leave the option out.")

    def how_to_finish(self, published_input: str, options: ConvertOptions) -> str:
        from edgekit.edgetpu import how_to_finish

        return how_to_finish(published_input, min_runtime(options))

    def run(self, inp: Intermediate, ctx: StepContext) -> Intermediate:
        from edgekit.edgetpu import CompilerLog, compare, compile_model, how_to_finish, preflight
        from edgekit.edgetpu.records import EdgeTpuReport

        if inp.path is None or not inp.path.is_file():
            raise ConversionError("edgetpu_compile: the int8 .tflite it should compile was not written.")
        if inp.precision != "int8":
            raise ConversionError(
                f"edgetpu_compile needs a full-integer int8 .tflite, but got a {inp.precision} one ({inp.path.name}).",
                hint="The Edge TPU runs only int8 models: convert with --quantize int8 and calibration data (--calib).",
            )
        opts = ctx.options
        min_rt = min_runtime(opts)
        with vendor_errors("litert", step=self.name, what=f"The Edge TPU pre-flight could not read {inp.path.name}"):
            pf = preflight(inp.path, min_runtime=min_rt)
        ctx.log(f"Edge TPU pre-flight: {pf.summary}")

        report: CompilerLog | None = None
        compiled_path = log_path = None
        finish: str | None = None
        disagreements: list[str] = []
        try:
            with vendor_errors("edgetpu_compiler", step=self.name,
                               what=f"Compiling {inp.path.name} for the Edge TPU failed"):
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
            report = result.report
            # named after the run's stem, the log beside the model (<stem>_edgetpu.tflite / .log)
            compiled_path = ctx.work / f"{ctx.stem}_edgetpu.tflite"
            log_path = compiled_path.with_suffix(".log")
            if Path(result.compiled_path) != compiled_path:
                publish(Path(result.compiled_path), compiled_path)
            if Path(result.log_path) != log_path:
                publish(Path(result.log_path), log_path)
            report.log_path = log_path.name
            report.seconds = result.seconds
            disagreements = compare(pf, report)
            for d in disagreements:
                ctx.log(f"pre-flight vs compiler: {d}")

        edgetpu = EdgeTpuReport(preflight=pf, compiled=compiled_path is not None, compiler=report,
                                disagreements=disagreements, how_to_finish=finish)
        return inp.derive(kind="edgetpu", path=compiled_path, precision="int8", report=edgetpu, report_key="edgetpu",
                          side_files={"compiler_log": log_path} if log_path is not None and log_path.is_file() else {})
