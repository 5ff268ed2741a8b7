"""Edge TPU pre-flight: predict, op by op, what the Edge TPU compiler will map, before it runs.

The prediction applies the rules of `edgekit.edgetpu.rules` to each op of the main subgraph in
execution order, then the compiler's partitioning rule: mapping stops at the first unsupported op
and that op and everything after it run on the CPU.

Float I/O, decided from Coral's documentation and real compiler logs (tests/fixtures/edgetpu):
- a QUANTIZE that converts a float graph input to int8 is not mapped (the compiler reports it as
  "otherwise supported, but not mapped"), but it does NOT stop the mapping: it runs on the CPU
  before the Edge TPU part, and everything after it can still map (MobileNet v2 with float I/O:
  70 of 72 ops mapped, the QUANTIZE and the DEQUANTIZE on the CPU);
- a DEQUANTIZE whose output is a graph output is not mapped either ("unsupported data type") and
  runs on the CPU after the Edge TPU part;
- both count in ops_total and as CPU ops, as the compiler counts them. A QUANTIZE between two
  integer types (uint8 I/O around an int8 model) is an ordinary op and maps (runtime 13+).

The model is read with `edgekit.tflite.model` (the reader under both this module and `inspect`);
the result is a `PreflightReport` (edgekit.edgetpu.records).
"""

from __future__ import annotations

from pathlib import Path

from edgekit.edgetpu.records import OpCode, PartitionPoint, PreflightOp, PreflightReport, Problem, ProblemKind
from edgekit.edgetpu.rules import (
    ACTIVATION_FIXES,
    CONST_TYPES,
    DEFAULT_MIN_RUNTIME,
    INT8_TYPES,
    OPS_TABLE_URL,
    PARAM_INPUTS,
    PARTITION_THREAD,
    REQUIREMENTS_URL,
    RULES,
    OpCtx,
)
from edgekit.edgetpu.tried import tried
from edgekit.tflite.model import EDGETPU_CUSTOM_OP, TfliteModel, TOp, is_edgetpu_op, read_tflite


def preflight(path: str | Path, min_runtime: int | None = None) -> PreflightReport:
    """The `edgetpu` object for the .tflite at PATH (see `preflight_model`)."""
    return preflight_model(read_tflite(path), min_runtime=min_runtime)


def op_verdict(op: TOp, model: TfliteModel, min_runtime: int) -> tuple[bool, str | None, OpCode]:
    """Whether the compiler can map OP on its own (ignoring partitioning): (ok, reason, code)."""
    if op.custom:
        return False, f"custom op '{op.op}' (custom ops never run on the Edge TPU)", "unsupported_op"
    ins = [model.tensor(i) for i in op.inputs]
    tensors = [t for t in ins if t is not None] + model.op_outputs(op)
    for t in tensors:
        if not t.const and t.dynamic:
            return (
                False,
                f"tensor '{t.name}' has a dynamic shape {t.shape} (static shapes are required)",
                "dynamic_shape",
            )
    for t in tensors:
        if (not t.const and t.dtype not in INT8_TYPES) or (t.const and t.dtype not in CONST_TYPES):
            return (
                False,
                f"works on the {t.dtype} tensor '{t.name}' (the Edge TPU runs int8/uint8 only)",
                "dtype",
            )
    rule = RULES.get(op.op)
    if rule is None:
        return False, f"{op.op} is not in Coral's supported-operations table", "unsupported_op"
    if rule.min_runtime > min_runtime:
        return (
            False,
            (f"{op.op} needs Edge TPU runtime {rule.min_runtime} or newer (compiling for runtime {min_runtime})"),
            "runtime_version",
        )
    for k in PARAM_INPUTS.get(op.op, ()):
        param = ins[k] if k < len(ins) else None
        if param is not None and not param.const:
            return False, f"its parameter tensor '{param.name}' is not a compile-time constant", "nonconst_params"
    for t in tensors:
        if not t.const and any(d > 1 for d in t.static_shape[:-3]):
            return (
                False,
                (f"tensor '{t.name}' has shape {t.static_shape}: only the 3 innermost dimensions may be larger than 1"),
                "rank",
            )
    if rule.check is not None:
        why = rule.check(OpCtx(op=op, model=model, min_runtime=min_runtime))
        if why:
            return False, f"{op.op} {why}", "limitation"
    return True, None, "mapped"


def _float_io(op: TOp, model: TfliteModel) -> bool:
    """A QUANTIZE of a float graph input, or a DEQUANTIZE that produces a graph output."""
    if op.op == "QUANTIZE":
        src = model.tensor(op.inputs[0]) if op.inputs else None
        return src is not None and op.inputs[0] in model.inputs and src.dtype.startswith("float")
    if op.op == "DEQUANTIZE":
        return bool(op.outputs) and all(o in model.outputs for o in op.outputs)
    return False


def _fraction(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def preflight_model(model: TfliteModel, min_runtime: int | None = None) -> PreflightReport:
    """Predict the compiler's mapping of MODEL. An already compiled model gets `predicted=False`."""
    rt = int(min_runtime or DEFAULT_MIN_RUNTIME)
    if model.edgetpu_compiled:
        cpu = [op.op for op in model.ops if not is_edgetpu_op(op)]
        return PreflightReport(
            predicted=False,
            compiled=True,
            ops_total=len(model.ops),
            ops_on_tpu=None,  # the compiled op hides how many source ops it holds
            edgetpu_custom_ops=len(model.ops) - len(cpu),
            cpu_ops=cpu,
            note=f"already compiled for the Edge TPU ({EDGETPU_CUSTOM_OP}); it needs the Edge TPU runtime "
            "(libedgetpu) and a Coral device to run. Pre-flight the uncompiled int8 model instead.",
        )
    entries: list[PreflightOp] = []
    first: PartitionPoint | None = None
    for op in model.ops:
        ok, reason, code = op_verdict(op, model, rt)
        entry = PreflightOp(index=op.index, op=op.op, mapped=ok, reason=reason, code=code, macs=model.op_macs(op))
        if _float_io(op, model):
            entry.mapped, entry.code = False, "float_io"
            entry.reason = (
                "quantizes the float input on the CPU, before the Edge TPU part"
                if op.op == "QUANTIZE"
                else "dequantizes to a float output on the CPU, after the Edge TPU part"
            )
        elif first is not None:
            entry.mapped, entry.code = False, "after_partition"
            entry.own_reason, entry.own_code = (None, None) if ok else (reason, code)
            entry.reason = (
                f"after the partition point (op {first.index} {first.op}): the compiler maps one subgraph only"
            )
        elif not ok:
            first = PartitionPoint(index=op.index, op=op.op, reason=reason, code=code, tried=tried(op, model, code))
        rule = RULES.get(op.op)
        if entry.mapped and rule is not None and rule.caveat:
            entry.caveat = rule.caveat
        entries.append(entry)

    on_tpu = [e for e in entries if e.mapped]
    macs_total = sum(e.macs for e in entries)
    macs_tpu = sum(e.macs for e in on_tpu)
    problems = _problems(model, entries, first)
    result = PreflightReport(
        predicted=True,
        compiled=False,
        min_runtime=rt,
        ops_total=len(entries),
        ops_on_tpu=len(on_tpu),
        ops_on_cpu=len(entries) - len(on_tpu),
        ops_on_tpu_fraction=_fraction(len(on_tpu), len(entries)),
        macs_total=macs_total,
        macs_on_tpu=macs_tpu,
        macs_on_tpu_fraction=_fraction(macs_tpu, macs_total),
        first_unsupported=first,
        ops=entries,
        problems=problems,
        suggestions=list(dict.fromkeys(p.suggestion for p in problems if p.suggestion)),
        rules_source=OPS_TABLE_URL,
    )
    result.summary = summary_line(result)
    return result


def summary_line(pf: PreflightReport) -> str:
    """One sentence: how much is predicted on the TPU and where the partition is."""
    if pf.compiled and not pf.predicted:
        return pf.note or "already compiled for the Edge TPU"
    frac = pf.ops_on_tpu_fraction or 0.0
    macs = pf.macs_on_tpu_fraction
    text = f"predicted {pf.ops_on_tpu} of {pf.ops_total} ops ({frac:.0%})"
    if macs is not None:
        text += f" and {macs:.1%} of MACs"
    text += " on the Edge TPU"
    first = pf.first_unsupported
    if first:
        text += f"; mapping stops at op {first.index} {first.op}: {first.reason}"
        if first.tried:
            text += f" ({first.tried})"
    return text


def _problem(kind: ProblemKind, message: str, suggestion: str, ops: list[int], source: str) -> Problem:
    return Problem(kind=kind, message=message, suggestion=suggestion, ops=ops, source=source)


def _problems(model: TfliteModel, entries: list[PreflightOp], first: PartitionPoint | None) -> list[Problem]:
    """What keeps ops off the TPU, grouped by cause, each with the fix where one is known."""
    out: list[Problem] = []
    by_code: dict[str, list[PreflightOp]] = {}
    for e in entries:
        code = e.code if e.code != "after_partition" else "own:" + (e.own_code or "mapped")
        by_code.setdefault(code, []).append(e)

    fio = by_code.get("float_io", [])
    if fio:
        out.append(
            _problem(
                "float_io",
                f"Float I/O: {len(fio)} QUANTIZE/DEQUANTIZE op(s) convert float input/output on the CPU.",
                "Convert with integer I/O (`--io-dtype uint8` or int8; TFLiteConverter "
                "inference_input_type / inference_output_type = tf.uint8) and feed quantized data, so no "
                "conversion runs on the CPU.",
                [e.index for e in fio],
                REQUIREMENTS_URL,
            )
        )
    dyn = [t for t in (model.tensor(i) for i in model.inputs) if t is not None and t.dynamic]
    if dyn or by_code.get("dynamic_shape"):
        names = ", ".join(f"'{t.name}' {t.shape}" for t in dyn) or "intermediate tensors"
        out.append(
            _problem(
                "dynamic_shape",
                f"Dynamic shape: {names}; the compiler needs every shape static.",
                "Export with a static batch of 1 (`--batch 1`; keras.Input(batch_size=1); torch.export / "
                "ONNX without a dynamic batch axis) so that no dimension is -1.",
                [e.index for e in by_code.get("dynamic_shape", [])],
                REQUIREMENTS_URL,
            )
        )
    dtype = by_code.get("dtype", []) + by_code.get("own:dtype", [])
    floats = [e for e in dtype if "float" in (e.own_reason or e.reason or "")]
    ints = [e for e in dtype if e not in floats]
    if floats:
        out.append(
            _problem(
                "not_quantized",
                f"{len(floats)} op(s) work on float tensors.",
                "Convert with full-integer quantization (a representative dataset and TFLITE_BUILTINS_INT8 "
                "only), so every op and tensor is int8.",
                [e.index for e in floats],
                REQUIREMENTS_URL,
            )
        )
    if ints:
        names = ", ".join(dict.fromkeys(e.op for e in ints))
        out.append(
            _problem(
                "int_tensors",
                f"{len(ints)} op(s) compute on int32/int64 tensors ({names}): shape arithmetic, usually left "
                "by a dynamic batch.",
                "Export with a static batch of 1, so the converter folds shape computations into constants.",
                [e.index for e in ints],
                REQUIREMENTS_URL,
            )
        )
    unsup = by_code.get("unsupported_op", []) + by_code.get("own:unsupported_op", [])
    acts = [e for e in unsup if e.op in ACTIVATION_FIXES]
    for name in dict.fromkeys(e.op for e in acts):
        fix, src = ACTIVATION_FIXES[name]
        idx = [e.index for e in acts if e.op == name]
        out.append(
            _problem(
                "unsupported_activation",
                f"{name} (op {', '.join(map(str, idx))}) is not supported.",
                fix[0].upper() + fix[1:] + ".",
                idx,
                src,
            )
        )
    others = [e for e in unsup if e.op not in ACTIVATION_FIXES]
    if others:
        names = ", ".join(dict.fromkeys(e.op for e in others))
        out.append(
            _problem(
                "unsupported_op",
                f"Not in Coral's supported-operations table: {names}.",
                "Replace these ops with supported ones, or move them to the end of the graph "
                "(post-processing), where running on the CPU costs only themselves.",
                [e.index for e in others],
                OPS_TABLE_URL,
            )
        )
    limits: tuple[tuple[str, ProblemKind, str], ...] = (
        (
            "runtime_version",
            "runtime_version",
            "Target a newer runtime (`--edgetpu-min-runtime 14`; the device "
            "then needs libedgetpu 14+) or avoid these ops.",
        ),
        (
            "rank",
            "rank",
            "Use a batch of 1 and keep tensors at most 3 non-trivial dimensions (reshape 5-D blocks).",
        ),
        ("nonconst_params", "nonconst_params", "Make weights and biases constants (freeze the graph)."),
        ("limitation", "limitation", "Change the op's parameters to meet Coral's listed limitation."),
    )
    for code, kind, fix in limits:
        hits = by_code.get(code, []) + by_code.get("own:" + code, [])
        if hits:
            reasons = "; ".join(
                dict.fromkeys(f"op {e.index}: {e.own_reason or e.reason}" for e in hits[:5])
            )
            out.append(_problem(kind, reasons, fix, [e.index for e in hits], OPS_TABLE_URL))
    transposes = [e.index for e in entries if e.op == "TRANSPOSE"]
    if transposes:
        flatten = [i for i in transposes if i + 1 < len(model.ops) and model.ops[i + 1].op == "RESHAPE"]
        what = (
            "a TRANSPOSE before a RESHAPE is the NCHW flatten order that PyTorch->TFLite layout conversion keeps"
            if flatten
            else "layout transposes are usually left by NCHW->NHWC conversion"
        )
        out.append(
            _problem(
                "transpose",
                f"{len(transposes)} TRANSPOSE op(s) (op {', '.join(map(str, transposes))}): {what}.",
                "TRANSPOSE maps only from runtime 14 (with -m 13 or older it becomes the partition point) and "
                "adds data movement. To remove it: end the feature extractor with global average pooling "
                "instead of Flatten, or permute the next FULLY_CONNECTED's input weights to NHWC order; "
                "elsewhere, build the model channel-last.",
                transposes,
                "https://github.com/google-coral/edgetpu/issues/193",
            )
        )
    if model.subgraphs > 1:
        out.append(
            _problem(
                "subgraphs",
                f"The model has {model.subgraphs} subgraphs (control flow); only the main one can map.",
                "Remove control flow (WHILE/IF) from the exported graph.",
                [],
                PARTITION_THREAD,
            )
        )
    if first is not None:
        cpu = [e for e in entries if e.code == "after_partition"]
        for p in out:
            if first.index in p.ops:
                p.blocking = True
                p.message += f" The partition at op {first.index} puts {len(cpu)} later op(s) on the CPU."
    return out
