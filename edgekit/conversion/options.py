"""The options of one conversion, declared once: the CLI, the Python API and the steps read this record.

Each option is one `option(...)` field (edgekit.core.option_field) with its help, its flag and its parser:
`edgekit convert`'s parameters are generated from these fields (edgekit.commands.declared) and
`edgekit.convert(**options)` checks its keywords against them, so the two cannot drift apart. The
options every conversion has are declared here; a target's own options (the Edge TPU compiler's) are
declared in its file under edgekit/targets/ and gathered from the target table into ConvertOptions,
so a new target brings its options with it. `manifest.json` records `to_dict()` (same keys since
manifest v1). An option other commands take too (--out, --force, --model, --input-shape, --batch ...) is the
shared `Flag` of edgekit.core.flags, so its spelling, help and parser are the same on every command.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from edgekit.core import flags
from edgekit.core.errors import UsageError
from edgekit.core.option_field import Declared, declared, option
from edgekit.core.parse import parse_floats
from edgekit.core.precisions import IoDtype
from edgekit.core.precisions import cli_help as precision_names
from edgekit.core.registry import suggest
from edgekit.core.typed import typed
from edgekit.targets import target_names, target_options

IO_DTYPES: tuple[str, ...] = get_args(IoDtype)


# The parsers: what was typed (on the command line, or as a string to the API) -> the field's value


def _comma_list(value: str | list[str], flag: str) -> list[str]:
    """"onnx,tflite" -> ["onnx", "tflite"] (the names are judged, with a did-you-mean, by the planner)."""
    return list(value) if isinstance(value, list) else [v for v in value.split(",") if v.strip()]


def _floats(value: str | None, flag: str) -> list[float] | None:
    return parse_floats(value, flag)


def _mask_thresholds(value: list[str] | str | None, flag: str) -> dict[str, float] | None:
    from edgekit.fidelity.kinds import parse_mask_thresholds

    return parse_mask_thresholds(value)


def _kinds(value: list[str] | str | None, flag: str) -> dict[str, str] | None:
    from edgekit.fidelity.kinds import parse_output_kinds

    return parse_output_kinds(value)


def _same_data(calib: str, val: str) -> bool:
    """Whether --calib and --val name the same data: the same bundled set, or the same file or folder."""
    a, b = str(calib).strip(), str(val).strip()
    if a.lower() == b.lower() == "mnist":
        return False  # the bundled digits: calibration on the train digits, validation on the test digits
    try:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()
    except (OSError, RuntimeError):  # a loop of links, a path too long: the data readers say what is wrong
        return False


# The default --int8-budget, seconds per int8 artifact's recipe search (issue 40): auto is the default recipe, and a
# MobileNetV2-class model's whole conversion to ONNX and TFLite at fp32 and int8 must stay under 3 minutes on a 2-core
# machine where plain misses and both searches run into it: 146.5 s at 30 s, 111.7 s with plain, 317 s at 60 s under
# heavier load (bench/int8_default.py mobilenet_v2; docs/int8.md)
INT8_BUDGET = 30.0


@dataclass
class CommonOptions:
    """The options every conversion has, whatever its targets (in the order `edgekit convert --help` shows)."""

    targets: list[str] = option(["onnx"], f"Comma list of: {', '.join(target_names())}.", flags=("--target", "-t"),
                                cli_type=str, parse=_comma_list)
    precisions: list[str] = option(["fp32"], f"Comma list of: {precision_names()}.", flags=("--quantize", "-q"),
                                   cli_type=str, parse=_comma_list)
    calib: str | None = option(None, "Calibration data: image folder, .npy/.npz, or 'mnist'.")
    calib_size: int = option(200, "Calibration samples to use.")
    val_size: int = option(1000, "Held-out samples to validate on (at most).")
    val: str | None = option(None, "Held-out data to validate every artifact on, given apart from --calib (an image "
                             "folder or .npy/.npz, with its labels, masks or boxes): other photos or videos than the "
                             "calibration's, so near-duplicates are never on both sides; --calib then calibrates "
                             "whole. Default: a quarter of --calib is held out.")
    input_shape: list[int] | None = flags.INPUT_SHAPE()
    input_shapes: dict[str, list[int]] | None = flags.INPUT_SHAPES()
    batch: int = flags.BATCH(1)
    io_dtype: IoDtype | None = option(None, "I/O type of int8 TFLite: int8 (default), uint8 (Edge TPU default) or "
                                      "float32.", cli_type=str | None)
    mean: list[float] | None = option(None, "Per-channel mean for image calibration data, e.g. 0.5 or "
                                      "0.485,0.456,0.406.", cli_type=str | None, parse=_floats)
    std: list[float] | None = option(None, "Per-channel std for image calibration data.", cli_type=str | None,
                                     parse=_floats)
    factory: str | None = flags.MODEL()
    trust_model: bool = flags.TRUST_MODEL()
    reparameterize: bool = option(
        False, "Fuse a PyTorch model's training-time branches before export, as it is deployed: reparameterize(), "
        "switch_to_deploy() or fuse() on each module that has one (MobileOne, RepVGG, RepViT, FastViT); every "
        "artifact is validated against the unfused model. Needs the module: a state_dict with --model, or a pickle.")
    signature: str = option("serving_default", "SavedModel signature to convert.")
    layout: str | None = option(None, "Layout of an ONNX source's image input: NCHW or NHWC (default: read from the "
                                "graph; tf2onnx writes Keras models as NHWC).")
    opset: int = option(18, "ONNX opset of the PyTorch, Keras and TF exports.")
    out_dir: Path | None = flags.OUT()
    force: bool = flags.FORCE()
    strict: bool = option(False, "Exit 5 when an artifact misses its fidelity thresholds.")
    validate_on: list[str] = option(
        [], "Also validate every artifact on the emulated CPU of these devices (comma list): pi3, pi4, pi5 (or "
        "raspberry-pi-3/4/5), with the aarch64 runtimes under qemu; a miss or crash there fails the artifact. Needs "
        "the arm64 userland (sudo edgekit emulate setup).", flags=("--validate-on",), cli_type=str,
        parse=_comma_list)
    int8_recipe: str = option("auto", "How int8 is made: auto (plain first, kept where it meets the int8 thresholds; "
                              "else the recovery recipes in turn, within --int8-budget), plain (no search), uint8, "
                              "equalize, equalize+bias, bias, percentile, mse, entropy, nncf (ONNX: NNCF's), mixed.")
    int8_budget: float | None = option(
        INT8_BUDGET, "Seconds the int8 recipe search (--int8-recipe auto or mixed) may spend per artifact: it starts "
        "no candidate that the slowest so far says would end past them, keeps the best so far, and the manifest says "
        "the budget ended. Where the first candidate alone takes more than that allows, the budget grows to 2.5 "
        "times its time, so a slow model still gets a second recipe. 0: plain only; inf: no limit.")
    deploy_cpu: str = option(
        "host", "The CPU the int8 artifacts are made for: host (this machine, from /proc/cpuinfo), x86-64-vnni, x86-64 "
        "(no VNNI), arm64-dotprod, arm64, pi3, pi4, pi5, or a CPU device profile (cpu-x86, cpu-arm64, raspberry-pi-5 "
        "...). It picks the ONNX int8 form (activations' sign, 7-bit weights or not); recorded in the manifest.",
        flags=("--for",))
    explain: bool = option(False, "Diagnose every int8 artifact layer by layer (always done when one misses).")
    output_kinds: dict[str, str] | None = option(
        None, "How an output is judged, by output name (--output-kind name=kind): classes, dense, sequence, mask, "
        "landmarks, score, presence (a score that says whether the landmarks are there: they are judged where the "
        "source's is at least 0.5), regression, detection[:yolov8|yolov5|nms|ssd|tflite-postprocess], or "
        "anchors:<face|face-full|palm|pose|anchors file> for a raw-anchor detector; default from its shape and "
        "values.", flags=("--output-kind",), cli_type=list[str] | None, multiple=True,
        parse=_kinds, cli_help=" Repeat per output.")
    mask_thresholds: dict[str, float] | None = option(
        None, "Where a single-channel probability map (the mask kind: text detectors, saliency) is cut before its mask "
        "and regions are compared: 0.3 for every mask output, or name=0.3 (which also judges that output as a mask); "
        "default 0.5.", flags=("--mask-threshold",), cli_type=list[str] | None, multiple=True,
        parse=_mask_thresholds, cli_help=" Repeat per output.")

    def check(self) -> None:
        """Range checks on plain numbers (names of targets, precisions, ... are checked by the planner)."""
        if self.batch < 1:
            raise UsageError(f"--batch must be at least 1, got {self.batch}.")
        if self.calib_size < 1 or self.val_size < 1:
            raise UsageError("--calib-size and --val-size must be at least 1.")
        if self.val is not None and self.calib is not None and _same_data(self.calib, self.val):
            raise UsageError(f"--val names the calibration data itself ({self.val}): validating on what was "
                             "calibrated on would hide what quantization lost.",
                             hint="Give --val other samples, or leave it out to hold out a quarter of --calib.")
        if self.int8_budget is not None and not self.int8_budget >= 0:  # NaN too
            raise UsageError(f"--int8-budget must be a number of seconds, 0 or more, got {self.int8_budget}.",
                             hint="Give the seconds the int8 recipe search may spend, e.g. --int8-budget 120.")
        if self.int8_budget == float("inf"):  # --int8-budget inf: no limit (None, as the manifest's options say it)
            self.int8_budget = None
        from edgekit.measure.deploy_cpu import deploy_cpu
        from edgekit.sources.onnx_layout import check_layout

        deploy_cpu(self.deploy_cpu)  # an unknown --for stops here, naming the choices
        self.layout = check_layout(self.layout)
        if self.validate_on:
            from edgekit.emulate.cpus import emulated_cpus

            self.validate_on = [c.device for c in emulated_cpus(self.validate_on)]
        if self.output_kinds:
            from edgekit.fidelity.kinds import check_kind

            self.output_kinds = {str(k): check_kind(str(v)) for k, v in self.output_kinds.items()}


TARGET_OPTIONS: tuple[type, ...] = tuple(target_options())  # each target's own options class, in table order


@dataclass
# The bases are gathered from the target table at import (one place per target). mypy cannot follow a star of a
# runtime tuple (misc: invalid base class): it sees the common options' fields and takes the targets' own as Any.
class ConvertOptions(*TARGET_OPTIONS, CommonOptions):  # type: ignore[misc]  # bases from the target table
    """Every option of `edgekit convert`: the common ones, then each target's own; defaults are the CLI's."""

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["out_dir"] = str(self.out_dir) if self.out_dir is not None else None
        from edgekit.measure.deploy_cpu import deploy_cpu

        # --for resolved (host: this machine's class): the ONNX int8 form made, what TFLite and OpenVINO assume
        d["deploy_cpu_form"] = deploy_cpu(self.deploy_cpu).to_dict()
        return d

    @classmethod
    def help(cls, name: str) -> str:
        return OPTIONS[name].help

    @classmethod
    def default(cls, name: str) -> Any:
        return OPTIONS[name].default

    @classmethod
    def from_keywords(cls, **keywords: Any) -> ConvertOptions:
        """ConvertOptions from the Python API's keywords, checked against the declarations.

        A keyword is a field's name or its flag's (`out_dir` or `out`, `factory` or `model`); a
        mistyped one gets a did-you-mean. A string is parsed as on the command line ("1,3,224,224",
        "0.5,0.5,0.5", "boxes=regression"), by the option's one parser.
        """
        named: dict[str, str] = {}  # field -> the keyword it was given as
        for key in keywords:
            name = API_NAMES.get(key)
            if name is None:
                guess = suggest(key, API_NAMES)
                raise UsageError(f"convert() has no option '{key}'.", hint=(f"did you mean '{guess}'? " if guess
                                 else "") + f"Options: {', '.join(OPTIONS)}.")
            if name in named:
                raise UsageError(f"convert() got the option {name} twice: as '{named[name]}' and as '{key}'.")
            named[name] = key
        values: dict[str, Any] = {}
        for name, key in named.items():
            value, decl = keywords[key], OPTIONS[name]
            parsed = (decl.parsed(value) if isinstance(value, str) and decl.form.parse
                      else {name: typed(key, value, decl.type)})
            # what a parsed value fills besides its own field gives way to a keyword given for it
            values.update({k: v for k, v in parsed.items() if k == name or k not in named})
        return cls(**values)

    def check(self) -> None:
        """The range checks of the common options, then of each target's (a target's class may define check)."""
        CommonOptions.check(self)
        for spec in TARGET_OPTIONS:
            own = spec.__dict__.get("check")
            if own is not None:
                own(self)


def _gather() -> dict[str, Declared]:
    """Every declared option by field name, common ones first; TypeError where a target reuses a name."""
    gathered: dict[str, Declared] = {}
    for cls in (CommonOptions, *TARGET_OPTIONS):
        for decl in declared(cls):
            if decl.name in gathered:
                raise TypeError(f"{cls.__name__} declares the option {decl.name}, which is already declared.")
            gathered[decl.name] = decl
    return gathered


OPTIONS: dict[str, Declared] = _gather()
FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(ConvertOptions)}
# The Python API's keywords: each field's name and its flag's (out -> out_dir, model -> factory, quantize -> precisions)
API_NAMES: dict[str, str] = {alias: d.name for d in OPTIONS.values() for alias in d.api_names}

__all__ = ["API_NAMES", "FIELDS", "IO_DTYPES", "OPTIONS", "CommonOptions", "ConvertOptions", "IoDtype",
           "TARGET_OPTIONS"]
