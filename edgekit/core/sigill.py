"""Which instruction an illegal-instruction crash (SIGILL) was, and the Arm extension it belongs to.

A runtime built for a newer Arm core can hold instructions an older one lacks: LSE atomics (`ldaddal`, `casal`:
ARMv8.1, so not on a Pi 4's Cortex-A72 or a Pi 3's A53), the int8 dot product (`sdot`/`udot`: ARMv8.2, a Pi 5's
A76 has it), fp16 arithmetic (ARMv8.2 FP16). Under emulation (edgekit.emulate) and on aarch64 hosts, edgekit
installs `report_on_sigill` in the child process that runs an artifact (edgekit.core.isolate): on SIGILL
it writes the faulting address, the instruction word and `decode`'s name for it to stderr, then lets the
signal end the process as before (the exit status is still SIGILL), so the crash is named with its
instruction rather than only its signal. `report_line` is that line, which error messages quote whole.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import sys

MARK = "edgekit: SIGILL"

# (mask, value, what it is, the extension and the first cores with it); the first match names the instruction
ENCODINGS: tuple[tuple[int, int, str, str], ...] = (
    (0x3F200C00, 0x38200000, "LSE atomic read-modify-write (LDADD/LDCLR/LDEOR/LDSET/LD[SU]MAX/MIN/SWP)",
     "LSE atomics (ARMv8.1-A)"),
    (0x3FA07C00, 0x08A07C00, "LSE compare-and-swap (CAS)", "LSE atomics (ARMv8.1-A)"),
    (0xBFA07C00, 0x08207C00, "LSE compare-and-swap pair (CASP)", "LSE atomics (ARMv8.1-A)"),
    (0x9FE0FC00, 0x0E809400, "int8 dot product (SDOT/UDOT, vector)", "dot product (ARMv8.2-A DotProd)"),
    (0x9FC0F400, 0x0F80E000, "int8 dot product (SDOT/UDOT, by element)", "dot product (ARMv8.2-A DotProd)"),
    (0xDFE0FC00, 0x4E80A400, "int8 matrix multiply (SMMLA/UMMLA)", "int8 matrix multiply (ARMv8.6-A I8MM)"),
    (0x9F60C400, 0x0E400400, "fp16 vector arithmetic (three registers, half precision)", "fp16 arithmetic "
     "(ARMv8.2-A FP16)"),
    (0xFFE00000, 0x1EE00000, "fp16 scalar arithmetic (half precision)", "fp16 arithmetic (ARMv8.2-A FP16)"),
    (0x3FFFFC00, 0x38BFC000, "load-acquire RCpc (LDAPR)", "RCpc (ARMv8.3-A)"),
    (0x1E000000, 0x04000000, "an SVE instruction", "SVE (ARMv8.2-A and later; no Raspberry Pi core has it)"),
)


def decode(word: int) -> tuple[str, str] | None:
    """(what the A64 instruction WORD is, its extension), for the extensions Pi cores differ in; else None."""
    for mask, value, what, extension in ENCODINGS:
        if word & mask == value:
            return what, extension
    return None


def describe(word: int) -> str:
    named = decode(word)
    return f"{named[0]}, {named[1]}" if named else "not an extension edgekit knows"


def report_line(address: int, word: int) -> str:
    """"edgekit: SIGILL at 0x...: instruction 0x... (what, extension)": written by the handler, parsed back."""
    return f"{MARK} at 0x{address:x}: instruction 0x{word:08x} ({describe(word)})"


def parse_report(text: str) -> dict[str, str] | None:
    """The report `report_on_sigill` wrote into a crashed process's stderr: address, word, what and extension."""
    m = re.search(rf"{MARK} at 0x([0-9a-f]+): instruction 0x([0-9a-f]{{8}}) \((.*)\)", text)
    if m is None:
        return None
    word = int(m.group(2), 16)
    named = decode(word)
    return {"address": f"0x{m.group(1)}", "instruction": f"0x{m.group(2)}", "what": named[0] if named else m.group(3),
            "extension": named[1] if named else "unknown"}


_HANDLER: object = None  # the callback: kept alive as long as the process


def report_on_sigill() -> bool:
    """Install the SIGILL reporter in this (Linux aarch64) process; False where it cannot be installed.

    The handler resets SIGILL to its default before writing, so returning re-executes the instruction and the
    process dies of SIGILL as it would have. It is a ctypes callback: it needs the GIL, which the runtimes
    release while they compute (onnxruntime's run, LiteRT's invoke), so a worker thread's fault is reported too.
    """
    global _HANDLER
    if not sys.platform.startswith("linux") or os.uname().machine != "aarch64":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    callback_type = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def _on_sigill(signum: int, info: int | None, _context: int | None) -> None:
        libc.signal(signal.SIGILL, ctypes.c_void_p(0))  # SIG_DFL: the re-executed instruction ends the process
        try:
            addr = ctypes.c_uint64.from_address((info or 0) + 16).value  # siginfo_t.si_addr: the faulting instruction
            word = ctypes.c_uint32.from_address(addr).value
            os.write(2, f"\n{report_line(addr, word)}\n".encode())
        except Exception:  # nothing may escape a signal handler; the process dies of SIGILL regardless
            pass

    class SigAction(ctypes.Structure):  # glibc's struct sigaction on aarch64
        _fields_ = [("sa_sigaction", callback_type), ("sa_mask", ctypes.c_ubyte * 128), ("sa_flags", ctypes.c_int),
                    ("sa_restorer", ctypes.c_void_p)]

    handler = callback_type(_on_sigill)
    action = SigAction(sa_sigaction=handler, sa_flags=0x4)  # SA_SIGINFO
    if libc.sigaction(signal.SIGILL, ctypes.byref(action), None) != 0:
        return False
    _HANDLER = (handler, action)
    return True


__all__ = ["ENCODINGS", "MARK", "decode", "describe", "parse_report", "report_line", "report_on_sigill"]
