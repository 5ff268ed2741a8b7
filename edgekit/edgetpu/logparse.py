"""Parse what edgetpu_compiler prints (stdout) and writes (<name>_edgetpu.log) into plain data.

The formats are those of real compiler releases 2.x to 16.0, as posted in public issue threads
(fixtures with their origin in tests/fixtures/edgetpu/): a summary of "Key: value" lines, the
"Number of operations that will run on Edge TPU/CPU" counts (printed only when some ops stay on
the CPU), and an "Operator  Count  Status" table (on stdout with -s, always in the .log). With
--search_delegate or --num_segments the compiler prints one block per attempt; the last one wins.
The result is a `CompilerLog` record (edgekit.edgetpu.records), whose `to_dict()` is the manifest's
`extra.edgetpu.compiler`.
"""

from __future__ import annotations

import re
from typing import Any

from edgekit.edgetpu.records import CompilerLog, OperatorRow, OperatorsSource

MAPPED = "Mapped to Edge TPU"
_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "KB": 1000, "MB": 1000**2, "GB": 1000**3}
_SIZE = re.compile(r"([\d.]+)\s*(GiB|MiB|KiB|GB|MB|KB|B)\b")
_FIELDS: dict[str, tuple[str, str]] = {  # CompilerLog field -> (regex, kind)
    "compiler_version": (r"Edge TPU Compiler version\s+(\S+)", "str"),
    "compile_ms": (r"Models? compiled successfully in (\d+) ms", "int"),
    "input_model": (r"^Input model:\s*(.+?)\s*$", "str"),
    "input_size_bytes": (r"^Input size:\s*(.+?)\s*$", "size"),
    "output_model": (r"^Output model:\s*(.+?)\s*$", "str"),
    "output_size_bytes": (r"^Output size:\s*(.+?)\s*$", "size"),
    "on_chip_memory_bytes": (r"On-chip memory used for caching model parameters:\s*(.+?)\s*$", "size"),
    "on_chip_memory_remaining_bytes": (
        r"On-chip memory remaining for caching model parameters:\s*(.+?)\s*$",
        "size",
    ),
    "on_chip_memory_available_bytes": (
        r"On-chip memory available for caching model parameters:\s*(.+?)\s*$",
        "size",
    ),
    "off_chip_memory_bytes": (
        r"Off-chip memory used for streaming uncached model parameters:\s*(.+?)\s*$",
        "size",
    ),
    "subgraphs": (r"Number of Edge TPU subgraphs:\s*(\d+)", "int"),
    "ops_total": (r"Total number of operations:\s*(\d+)", "int"),
    "operation_log": (r"^Operation log:\s*(.+?)\s*$", "str"),
    "ops_on_tpu": (r"Number of operations that will run on Edge TPU:\s*(\d+)", "int"),
    "ops_on_cpu": (r"Number of operations that will run on CPU:\s*(\d+)", "int"),
    "timeout_s": (r"Started a compilation timeout timer of (\d+) seconds", "int"),
}
_TABLE_HEADER = re.compile(r"^\s*Operator\s+Count\s+Status\s*$")
_TABLE_ROW = re.compile(r"^\s*([A-Z][A-Z0-9_]*|[a-z][\w-]*)\s+(\d+)\s+(\S.*?)\s*$")
_SUCCESS = ("Model compiled successfully", "Models compiled successfully", "Compilation succeeded")
_FAILURE = ("Compilation failed", "Internal compiler error", "Compilation timeout", "Aborting")


def size_bytes(text: str) -> int | None:
    """'4.21MiB' / '0.00B' / '41.75KiB' -> bytes."""
    m = _SIZE.search(text)
    return int(round(float(m.group(1)) * _UNITS[m.group(2)])) if m else None


def operators_table(text: str) -> tuple[list[OperatorRow], bool]:
    """The last "Operator Count Status" table in TEXT, and whether it lists every operator."""
    rows: list[OperatorRow] = []
    complete = True
    in_table = False
    for line in text.splitlines():
        if _TABLE_HEADER.match(line):
            rows, complete, in_table = [], True, True
            continue
        if not in_table:
            continue
        if not line.strip():
            if rows:
                in_table = False
            continue
        if line.lstrip().startswith("..."):  # "... All other operators were mapped successfully."
            complete = False
            in_table = False
            continue
        m = _TABLE_ROW.match(line)
        if not m:
            in_table = False
            continue
        status = m.group(3)
        rows.append(OperatorRow(op=m.group(1), count=int(m.group(2)), status=status, mapped=status == MAPPED))
    return rows, complete


def failure_reason(text: str) -> str | None:
    """The compiler's own words for why it failed, or None when it did not."""
    if not _failed(text):
        return None
    for pattern in (
        r"Compilation failed:\s*(.+?)\s*$",
        r"(Compilation timeout\..*?)\s*$",
        r"(Internal compiler error\..*?)\s*$",
        r"^ERROR:\s*(.+?)\s*$",
    ):
        hits = re.findall(pattern, text, flags=re.M)
        if hits:
            return hits[-1]
    return "Compilation failed (the compiler gave no reason)."


def _failed(text: str) -> bool:
    last_ok = max((text.rfind(s) for s in _SUCCESS), default=-1)
    last_bad = max((text.rfind(s) for s in _FAILURE), default=-1)
    return last_bad > last_ok


def parse_log(stdout: str, log_text: str | None = None) -> CompilerLog:
    """Structured report of one compiler run from its stdout (and its .log file, when there is one)."""
    text = stdout or ""
    fields: dict[str, Any] = {}
    for key, (pattern, kind) in _FIELDS.items():
        hits = re.findall(pattern, text, flags=re.M)
        if not hits and log_text and key == "compiler_version":
            hits = re.findall(pattern, log_text, flags=re.M)
        value: Any = hits[-1] if hits else None
        if value is not None and kind == "int":
            value = int(value)
        elif value is not None and kind == "size":
            value = size_bytes(value)
        fields[key] = value
    report = CompilerLog(**fields)
    rows, complete = operators_table(text)
    source: OperatorsSource = "stdout"
    if not rows and log_text:
        rows, complete = operators_table(log_text)
        source = "log"
    if rows and report.ops_total is not None and sum(r.count for r in rows) != report.ops_total:
        complete = False  # a table cut short (or one of several attempts): its sums are not the model's
    report.operators = rows
    report.operators_complete = complete if rows else False
    report.operators_source = source if rows else None
    failed = _failed(text)
    report.success = False if failed else (True if any(s in text for s in _SUCCESS) else None)
    report.failure = failure_reason(text) if failed else None
    report.errors = re.findall(r"^ERROR:\s*(.+?)\s*$", text, flags=re.M)
    report.attempts = len(re.findall(r"^Try to compile segment with \d+ ops", text, flags=re.M)) or None
    _fill_counts(report, text)
    return report


def _fill_counts(report: CompilerLog, text: str) -> None:
    """Derive the op counts the compiler leaves out (it prints them only when some ops stay on the CPU)."""
    rows = report.operators
    if report.ops_on_tpu is None and rows and report.operators_complete:
        report.ops_on_tpu = sum(r.count for r in rows if r.mapped)
        report.ops_on_cpu = sum(r.count for r in rows if not r.mapped)
    elif (
        report.ops_on_tpu is None
        and report.ops_total is not None
        and report.success
        and "not all operations are supported" not in text
    ):
        report.ops_on_tpu, report.ops_on_cpu = report.ops_total, 0
    if report.ops_total is None and report.ops_on_tpu is not None and report.ops_on_cpu is not None:
        report.ops_total = report.ops_on_tpu + report.ops_on_cpu
