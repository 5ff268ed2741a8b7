"""Find and run Coral's edgetpu_compiler, with a timeout, and read back what it says.

The compiler is a closed-source x86-64 Linux binary from Coral's apt repository; no Python
registry has it. Where it is absent the caller still has the Edge TPU-ready int8 model, and
`how_to_finish()` says exactly how to compile it elsewhere (the repository's Dockerfile or the apt
lines). The compiler runs in its own process group so that a timeout also stops the child process
it forks for the compilation.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from edgekit.core.border import vendor_message
from edgekit.core.errors import ConversionError, NotAvailable, UsageError
from edgekit.core.fsutil import publish
from edgekit.edgetpu.coral import COMPILER_PACKAGE, apt_install
from edgekit.edgetpu.logparse import parse_log
from edgekit.edgetpu.records import CompileResult, CompilerLog, PreflightReport
from edgekit.edgetpu.rules import STATUS

COMPILER_NAME = "edgetpu_compiler"
_GRACE_S = 15.0  # beyond the compiler's own --timeout_sec, before we kill it


def how_to_finish(model: str | Path | None = None, min_runtime: int | None = None) -> str:
    """The exact steps to compile the Edge TPU-ready MODEL on a machine that can have the compiler.

    MODEL is shown as given: pass the path the user will see (relative to the current folder).
    """
    m = str(model) if model else "MODEL_int8.tflite"
    flag = f" -m {min_runtime}" if min_runtime else ""
    return (
        f"edgetpu_compiler is not installed here, so {m} was written Edge TPU-ready but not compiled. To finish, "
        "either (a) with Docker on an x86-64 host with internet access: in the edgekit repository run "
        "`docker build --target edgetpu -t edgekit-edgetpu .`, then, from the folder that holds the model, "
        f'`docker run --rm -v "$PWD:/work" -w /work edgekit-edgetpu edgetpu_compiler -s{flag} -o . {m}` '
        "(or run the whole conversion there: `... edgekit-edgetpu edgekit convert SOURCE --target edgetpu "
        "--calib DATA`); or (b) on x86-64 Debian/Ubuntu, install Coral's package: "
        f"`{apt_install(COMPILER_PACKAGE)}`, then run "
        f"`edgetpu_compiler -s{flag} {m}` or re-run edgekit convert (it finds edgetpu_compiler on PATH, or "
        "pass --edgetpu-compiler PATH)."
    )


def find_compiler(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The compiler named by EXPLICIT (checked), else `edgetpu_compiler` on PATH, else None."""
    if explicit:
        p = Path(explicit).expanduser()
        if not p.exists():
            found = shutil.which(str(explicit))
            if not found:
                raise UsageError(
                    f"--edgetpu-compiler {explicit}: no such file.",
                    hint="Pass the path of edgetpu_compiler (e.g. /usr/bin/edgetpu_compiler).",
                )
            return Path(found)
        if p.is_dir() or not os.access(p, os.X_OK):
            raise UsageError(
                f"--edgetpu-compiler {p} is not an executable file.",
                hint=f"Point it at the edgetpu_compiler binary, or make it executable: chmod +x {p}",
            )
        return p.resolve()
    found = shutil.which(COMPILER_NAME)
    return Path(found) if found else None


def compiler_version(exe: str | os.PathLike[str], timeout: float = 30.0) -> str | None:
    """'16.0.384591198' from `edgetpu_compiler --version`, or None when it cannot tell."""
    try:
        proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"version\s+(\d+(?:\.\d+)*)", (proc.stdout or "") + (proc.stderr or ""))
    return m.group(1) if m else None


def _run(cmd: list[str], timeout: float) -> tuple[int, str]:
    """Run CMD in its own process group; kill the whole group on timeout. Returns (rc, stdout+stderr)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise TimeoutError(out or "") from None
    return proc.returncode, out or ""


def compile_model(
    tflite_path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    compiler: str | os.PathLike[str] | None = None,
    min_runtime_version: int | str | None = None,
    timeout: float = 180.0,
) -> CompileResult:
    """Compile TFLITE_PATH for the Edge TPU into OUT_DIR: <stem>_edgetpu.tflite and <stem>_edgetpu.log.

    Returns the paths, the parsed log (with the compiler's stdout), the seconds and the command. Raises NotAvailable
    (with how_to_finish) when there is no compiler, ConversionError when it fails or times out.
    """
    model = Path(tflite_path)
    if not model.is_file():
        raise UsageError(f"No such model: {model}.")
    exe = find_compiler(compiler)
    if exe is None:
        raise NotAvailable(
            "The Edge TPU compiler (edgetpu_compiler) is not installed here; Coral ships it only as an "
            "x86-64 Debian package, and no Python registry has it.",
            hint=how_to_finish(model.name, int(min_runtime_version) if min_runtime_version else None),
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    version = compiler_version(exe)
    stage = Path(tempfile.mkdtemp(prefix=".edgetpu-", dir=out))
    cmd = [str(exe), "-s", "-o", str(stage)]
    if min_runtime_version:
        cmd += ["-m", str(min_runtime_version)]
    major = int(version.split(".")[0]) if version else 0
    if major >= 16:  # --timeout_sec exists from compiler 16 on; older ones reject unknown flags
        cmd += ["--timeout_sec", str(max(1, int(timeout)))]
    cmd.append(str(model.resolve()))
    t0 = time.perf_counter()
    try:
        try:
            rc, text = _run(cmd, timeout + (_GRACE_S if major >= 16 else 0.0))
        except TimeoutError as exc:
            raise ConversionError(
                f"edgetpu_compiler did not finish within {timeout:.0f} s and was stopped; {model.name} was "
                "not compiled." + (f" Its last words: {vendor_message(exc, last=True)}" if str(exc).strip() else ""),
                hint="Large activation tensors are the usual cause: raise --edgetpu-timeout, reduce the "
                "input resolution, or try the compiler's --search_delegate yourself.",
            ) from None
        except OSError as exc:
            raise ConversionError(
                f"Could not start {exe}: {exc.strerror or exc}.",
                hint="Check that it is the x86-64 edgetpu_compiler binary for this machine.",
            ) from exc
        seconds = time.perf_counter() - t0
        compiled = stage / f"{model.stem}_edgetpu.tflite"
        log_src = stage / f"{model.stem}_edgetpu.log"
        log_text = log_src.read_text(errors="replace") if log_src.is_file() else None
        report = parse_log(text, log_text)
        if rc != 0 or report.success is False or not compiled.is_file():
            reason = report.failure or (f"exit status {rc}" if rc else "it wrote no compiled model")
            raise ConversionError(
                f"edgetpu_compiler failed on {model.name}: {reason}",
                hint=_failure_hint(reason) + " Full compiler output: " + " | ".join(text.strip().splitlines()[-6:]),
            )
        final = publish(compiled, out / compiled.name)
        log_path = out / log_src.name
        if log_text is not None:
            publish(log_src, log_path)
        else:  # compilers that write no .log: keep what they printed
            from edgekit.core.fsutil import atomic_write_text

            atomic_write_text(log_path, text)
        report.stdout = text[-20000:]  # the summary lines; the .log holds the per-op table
        report.compiler_path = str(exe)
        return CompileResult(
            compiled_path=str(final),
            log_path=str(log_path),
            report=report,
            seconds=round(seconds, 3),
            command=cmd,
        )
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _failure_hint(reason: str) -> str:
    r = reason.lower()
    if "large activation" in r or "timeout" in r:
        return "Activations too large for the Edge TPU: reduce the input resolution or split the model."
    if "internal compiler error" in r:
        return "The compiler crashed: check that the model is fully int8 with static shapes (edgekit inspect)."
    if "didn't find op" in r or "version" in r:
        return (
            "The model uses an op version newer than this compiler knows; convert with an older TFLite or "
            "use the newest edgetpu_compiler."
        )
    return "Run `edgekit inspect` on the int8 model to see which ops the Edge TPU cannot take."


def compare(preflight: PreflightReport, report: CompilerLog) -> list[str]:
    """Where the pre-flight prediction and the compiler's verdict disagree, one sentence each."""
    out: list[str] = []
    p_tpu, c_tpu = preflight.ops_on_tpu, report.ops_on_tpu
    p_total, c_total = preflight.ops_total, report.ops_total
    if c_total is not None and p_total is not None and c_total != p_total:
        out.append(f"op count: pre-flight saw {p_total} ops, the compiler counted {c_total}")
    if c_tpu is not None and p_tpu is not None and c_tpu != p_tpu:
        out.append(f"ops on the Edge TPU: predicted {p_tpu} of {p_total}, compiler mapped {c_tpu} of {c_total}")
    rows = report.operators
    if rows and report.operators_complete:
        predicted: dict[str, list[int]] = {}
        for e in preflight.ops:
            predicted.setdefault(e.op, [0, 0])[0 if e.mapped else 1] += 1
        actual: dict[str, list[int]] = {}
        statuses: dict[str, list[str]] = {}
        for r in rows:
            actual.setdefault(r.op, [0, 0])[0 if r.mapped else 1] += r.count
            if not r.mapped:
                statuses.setdefault(r.op, []).append(r.status)
        for op in sorted(set(predicted) | set(actual)):
            p, a = predicted.get(op, [0, 0]), actual.get(op, [0, 0])
            if p[0] != a[0]:
                why = f" (compiler: {'; '.join(dict.fromkeys(statuses[op]))})" if op in statuses else ""
                out.append(
                    f"{op}: predicted {p[0]} on the Edge TPU and {p[1]} on the CPU, compiler mapped "
                    f"{a[0]} and left {a[1]} on the CPU{why}"
                )
    first = preflight.first_unsupported
    if (
        first
        and rows
        and any(r.op == first.op and r.mapped for r in rows)
        and not any(r.op == first.op and not r.mapped for r in rows)
    ):
        out.append(
            f"the predicted partition op {first.op} (op {first.index}) was mapped by the compiler "
            f"(pre-flight said: {first.reason})"
        )
    if report.subgraphs is not None and report.subgraphs > 1:
        out.append(
            f"the compiler made {report.subgraphs} Edge TPU subgraphs; the pre-flight assumes one "
            f"({STATUS['after_partition']!r} otherwise)"
        )
    return out
