"""Render an inspection report (the `InspectReport` of `inspect_model`) for people: rich tables on stdout."""

from __future__ import annotations

from rich.console import Console, JustifyMethod
from rich.table import Table

from edgekit.core.artifact import QuantParams
from edgekit.core.sniff import EDGETPU_CUSTOM_OP
from edgekit.edgetpu.records import PreflightReport
from edgekit.inspect.records import InspectReport, TensorInfo
from edgekit.report.text import human_bytes


def _shape(spec: TensorInfo) -> str:
    shape = spec.shape
    if shape is None:
        return "?"
    return "[" + ",".join("?" if d is None or d < 0 else str(d) for d in shape) + "]"


def _quant(q: QuantParams | None) -> str:
    if q is None:
        return ""
    if isinstance(q.scale, list):
        return f"per-channel ({len(q.scale)}, axis {q.axis})"
    return f"s={q.scale:.4g} zp={q.zero_point}"


def _tensors(specs: list[TensorInfo], consts: bool = False) -> str:
    shown = [s for s in specs if consts or not s.const]
    return " ".join(f"{s.dtype}{_shape(s)}" for s in shown)


def _macs(n: int | None) -> str:
    if not n:
        return ""
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f}{unit}"
    return str(n)


def render(report: InspectReport, console: Console) -> None:
    """Print REPORT: summary, I/O, ops (with the Edge TPU verdict for .tflite), params, Edge TPU section."""
    console.print(
        f"[bold]{report.path}[/bold]  {report.format}, {human_bytes(report.size_bytes)}, sha256 {report.sha256[:12]}"
    )
    shapes = "all static"
    if not report.all_static:
        shapes = "[yellow]dynamic shapes[/yellow] " + ", ".join(report.dynamic_tensors[:3])
    console.print(
        f"{len(report.ops)} ops, {_macs(report.macs) or 0} MACs, "
        f"{report.params.count:,} parameters ({human_bytes(report.params.bytes)}), {shapes}"
    )
    if report.precision:  # an OpenVINO IR: what its graph computes in
        console.print(f"computes in {report.precision} ({report.producer or 'OpenVINO IR'}, IR v{report.ir_version})")
    if report.edgetpu_compiled:
        console.print(
            f"[bold]compiled for the Edge TPU[/bold] ({EDGETPU_CUSTOM_OP}): needs libedgetpu and a Coral device to run"
        )
    custom = sorted({o.op for o in report.ops if o.custom and o.op != EDGETPU_CUSTOM_OP})
    if custom:  # a plain LiteRT cannot run these: say so before anyone profiles the file
        from rich.markup import escape

        from edgekit.runtimes.litert_errors import custom_op_hint

        console.print(f"[bold yellow]custom ops[/bold yellow]: {escape(', '.join(custom))}. "
                      f"{escape(custom_op_hint(custom))}", highlight=False, markup=True)

    io = Table(title="inputs / outputs", title_justify="left", show_edge=False)
    for col in ("", "name", "dtype", "shape", "quantization"):
        io.add_column(col)
    for kind, specs in (("input", report.inputs), ("output", report.outputs)):
        for s in specs:
            io.add_row(kind, s.name, s.dtype, _shape(s), _quant(s.quantization))
    console.print(io)

    tpu = {e.index: e for e in report.edgetpu.ops} if report.edgetpu is not None else {}
    ops = Table(title="operators (execution order)", title_justify="left", show_edge=False)
    cols: tuple[tuple[str, JustifyMethod], ...] = (
        ("#", "right"),
        ("op", "left"),
        ("v", "right"),
        ("inputs", "left"),
        ("outputs", "left"),
        ("MACs", "right"),
    )
    for col, just in cols:
        ops.add_column(col, justify=just)
    if tpu:
        ops.add_column("Edge TPU")
    for o in report.ops:
        row = [
            str(o.index),
            o.op,
            str(o.version or ""),
            _tensors(o.inputs),
            _tensors(o.outputs),
            _macs(o.macs),
        ]
        if tpu:
            e = tpu.get(o.index)
            row.append("[green]TPU[/green]" if e and e.mapped else f"[red]CPU[/red] {(e.reason if e else None) or ''}")
        ops.add_row(*row)
    console.print(ops)

    params = Table(title="parameters by dtype", title_justify="left", show_edge=False)
    for col in ("dtype", "count", "bytes"):
        params.add_column(col, justify="left" if col == "dtype" else "right")
    for dtype, counts in report.params.by_dtype.items():
        params.add_row(dtype, f"{counts['count']:,}", human_bytes(counts["bytes"]))
    console.print(params)

    if report.edgetpu is not None:
        render_edgetpu(report.edgetpu, console)


def render_edgetpu(pf: PreflightReport, console: Console) -> None:
    """The Edge TPU section: prediction summary, partition point, problems and fixes."""
    console.print(
        "[bold]Edge TPU pre-flight[/bold] (a prediction from Coral's documented rules, not a compiler run)"
        if pf.predicted
        else "[bold]Edge TPU[/bold]"
    )
    if pf.compiled:
        console.print(f"  {pf.note or ''}")
        return
    frac = pf.ops_on_tpu_fraction or 0.0
    color = "green" if frac == 1.0 else ("yellow" if frac >= 0.5 else "red")
    macs = pf.macs_on_tpu_fraction
    console.print(
        f"  [{color}]{pf.ops_on_tpu} of {pf.ops_total} ops ({frac:.0%})[/{color}] on the Edge TPU"
        + (f", {macs:.1%} of MACs" if macs is not None else "")
        + f" (runtime {pf.min_runtime}+)"
    )
    first = pf.first_unsupported
    if first:
        console.print(
            f"  partition at op {first.index} [bold]{first.op}[/bold]: {first.reason}; it and "
            "everything after it run on the CPU"
        )
        if first.tried:
            console.print(f"    {first.tried}")
    for p in pf.problems:
        console.print(f"  [yellow]-[/yellow] {p.message}")
        if p.suggestion:
            console.print(f"    fix: {p.suggestion}")
