"""The flags several commands take, each declared once (edgekit.core.option_field.Flag).

`-d` is --device, `-r` --runtime and `-O` --option on every command that has them, and a flag's help
is written here once; a command gives its own default or help only where the flag means something
else there (bench's --device keeps only some devices; its --runs count per row). Where a record below
the CLI holds the default (MeasureSettings' runs, ServeConfig's threads), the flag has none of its own
(EACH) and each command reads it from that record. The remote ones are in edgekit.remote.options;
`edgekit convert`'s own in edgekit.conversion.options, whose fields that other commands take too (--out, --force,
--model, --trust-model, --input-shape, --batch, and the Edge TPU target's --edgetpu-min-runtime) are these Flags.
A flag keeps one meaning everywhere: `-o` is --out on the commands that write a folder (convert, bench) and
--output on those that write one file (profile, check, emulate check).
"""

from __future__ import annotations

from typing import Any

from edgekit.core.errors import UsageError
from edgekit.core.option_field import EACH, flag
from edgekit.core.parse import parse_input_shapes

# Edge TPU runtime versions edgetpu_compiler's -m accepts (Coral: compiler 16 targets runtime 14 by default)
EDGETPU_RUNTIMES = range(10, 17)


def runtime_options(items: list[str] | None, flag: str = "--option") -> dict[str, Any]:
    """--option KEY=VALUE pairs for the runtime; true/false/ints become Python values."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} '{item}' is not KEY=VALUE.", hint=f"For example: {flag} xnnpack=false")
        v: Any = value.strip()
        if v.lower() in ("true", "false"):
            v = v.lower() == "true"
        elif v.lstrip("-").isdigit():
            v = int(v)
        out[key.strip()] = v
    return out


def edgetpu_runtime(value: int | str | None, flag: str = "--edgetpu-min-runtime") -> int | None:
    """An Edge TPU runtime version (14, or "14" as typed) as an int, checked against the versions edgetpu_compiler
    knows; None or "" stays None (the compiler's default). UsageError naming the values that work."""
    if value is None or str(value).strip() == "":
        return None
    try:
        version = int(str(value).strip())
    except ValueError:
        version = -1
    if version not in EDGETPU_RUNTIMES:
        raise UsageError(
            f"{flag} '{value}' is not an Edge TPU runtime version.",
            hint=f"Pass an integer from {EDGETPU_RUNTIMES.start} to {EDGETPU_RUNTIMES.stop - 1} (edgetpu_compiler -m), "
            "e.g. 13 for the runtime in Coral's 2020-2021 packages, or leave it out for the compiler's default (14).",
        )
    return version


def parse_shapes(value: list[str] | str | None, flag: str = "--input-shape") -> tuple[list[int] | None,
                                                                                   dict[str, list[int]] | None]:
    """--input-shape as typed: plain dims (1,3,224,224) for a single-input model, or name:dims once per input ->
    (the plain shape or None, the shapes by input name or None)."""
    return parse_input_shapes(value)


DEVICE = flag("auto", "auto|cpu|gpu|edgetpu|tpu, a device name or a .toml file.", flags=("--device", "-d"))
RUNTIME = flag(None, "onnxruntime, litert, torch or tf (default: the format's).", flags=("--runtime", "-r"))
THREADS = flag(None, "Runtime threads (default: the runtime's or device's).", flags=("--threads",))
RUNS = flag(EACH, "Minimum number of timed runs.", flags=("--runs",))
MIN_SECONDS = flag(EACH, "Minimum duration of the timed runs, in seconds.", flags=("--min-seconds",))
WARMUP = flag(EACH, "Untimed runs before timing.", flags=("--warmup",))
# One meaning on every command, the samples one inference takes: convert makes its artifacts for it, profile and bench
# run it (each command's default is its record's: ConvertOptions', MeasureSettings', BenchSettings')
BATCH = flag(EACH, "Samples per inference. convert: what a dynamic batch dimension is fixed to (TFLite and Edge TPU "
             "artifacts are static); profile, bench: what each run feeds, where the artifact's batch is dynamic or "
             "equal.", flags=("--batch",), min=1)
MAX_BATCH = flag(EACH, "The largest batch run at once, for models with a dynamic batch.", flags=("--max-batch",))
INPUT = flag(None, "Real inputs: 'mnist', an image folder, a .npy/.npz (default: random data of the right dtype and "
             "range).", flags=("--input",))
RUNTIME_OPTION = flag(None, "Runtime option KEY=VALUE (repeat): graph_optimization=basic, kernels=auto|xnnpack|builtin "
                      "(LiteRT), xnnpack=false, api=compiled, edgetpu_device=usb:0, signature=NAME, tpu=NAME, "
                      "fp16=true.", flags=("--option", "-O"), cli_type=list[str] | None, multiple=True,
                      parse=runtime_options)
JSON = flag(False, "Print the result as JSON alone on stdout.", flags=("--json",))
OUTPUT = flag(None, "Also write the JSON to this file.", flags=("--output", "-o"))
FORCE = flag(False, "Replace what an earlier run wrote.", flags=("--force/--no-force",))
OUT = flag(None, "Output folder (default: convert's edgekit-out/<stem>, bench's <run folder>/bench).",
           flags=("--out", "-o"))
MODEL = flag(None, "package.module:factory that builds the network, for a weights-only file (a PyTorch state_dict; "
             "Keras weights for convert) or, for convert without a SOURCE, the model itself.", flags=("--model",))
TRUST_MODEL = flag(False, "Allow formats whose loading runs code from the file (pickled PyTorch modules, Keras Lambda "
                   "layers).", flags=("--trust-model/--no-trust-model",))
INPUT_SHAPE = flag(None, "Input shape, batch first, in the source's layout: 1,1,28,28 (where the model does not record "
                   "it: TorchScript, a state_dict; or to fix a dynamic one).", flags=("--input-shape",),
                   cli_type=list[str] | None, multiple=True, parse=parse_shapes, fills=("input_shape", "input_shapes"),
                   cli_help=" For a model with several inputs, once per input: --input-shape name:1,3,320,320.")
INPUT_SHAPES = flag(None, "Shapes of a multi-input model's inputs by name (--input-shape name:1,3,320,320, once per "
                    "input).", flags=("--input-shape",), cli=False)  # no flag of its own: INPUT_SHAPE's parse fills it
# A string on the command line, so a bad one gets edgetpu_runtime's message (and the versions that work), not click's
EDGETPU_MIN_RUNTIME = flag(None, f"Edge TPU runtime version the model must run on (edgetpu_compiler -m), "
                           f"{EDGETPU_RUNTIMES.start} to {EDGETPU_RUNTIMES.stop - 1}; default 14, as edgetpu_compiler "
                           "16. convert compiles for it; inspect pre-flights against it.",
                           flags=("--edgetpu-min-runtime",), cli_type=str | None, parse=edgetpu_runtime)

__all__ = ["BATCH", "DEVICE", "EDGETPU_MIN_RUNTIME", "EDGETPU_RUNTIMES", "FORCE", "INPUT", "INPUT_SHAPE",
           "INPUT_SHAPES", "JSON", "MAX_BATCH", "MIN_SECONDS", "MODEL", "OUT", "OUTPUT", "RUNS", "RUNTIME",
           "RUNTIME_OPTION", "THREADS", "TRUST_MODEL", "WARMUP", "edgetpu_runtime", "parse_shapes", "runtime_options"]
