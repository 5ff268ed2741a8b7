"""SIGILL named with its instruction: the decoder on real A64 encodings, the report line, the isolated child's error."""

from __future__ import annotations

import signal
import subprocess

import pytest

from edgekit.core.isolate import _died
from edgekit.core.sigill import decode, parse_report, report_line

# real A64 words (as an assembler writes them) and the extension each needs
EXTENSIONS = [
    (0xB8E10000, "LSE atomics"),  # ldaddal w1, w0, [x0]
    (0x88E0FC41, "LSE atomics"),  # casal w0, w1, [x2]
    (0x4E829420, "dot product"),  # sdot v0.4s, v1.16b, v2.16b
    (0x6E829420, "dot product"),  # udot v0.4s, v1.16b, v2.16b
    (0x4F82E020, "dot product"),  # sdot v0.4s, v1.16b, v2.4b[0]
    (0x4E421420, "fp16 arithmetic"),  # fadd v0.8h, v1.8h, v2.8h
    (0x1EE22820, "fp16 arithmetic"),  # fadd h0, h1, h2
    (0x4E80A420, "int8 matrix multiply"),  # smmla v0.4s, v1.16b, v0.16b
]
# ARMv8.0 instructions every Pi core has: never blamed
BASE = [0x8B020020, 0xB9400020, 0xD65F03C0, 0x11000420, 0xF9400020, 0x4E22D420, 0x1E622820, 0x0E209400]


@pytest.mark.parametrize(("word", "extension"), EXTENSIONS)
def test_the_extensions_pi_cores_differ_in_are_named(word: int, extension: str) -> None:
    named = decode(word)
    assert named is not None and named[1].startswith(extension), (hex(word), named)


@pytest.mark.parametrize("word", BASE)
def test_base_instructions_are_not_blamed(word: int) -> None:
    assert decode(word) is None, hex(word)


def test_the_report_line_round_trips() -> None:
    found = parse_report("noise\n" + report_line(0x5500A000, 0xB8E10000) + "\nqemu: uncaught target signal 4")
    assert found == {"address": "0x5500a000", "instruction": "0xb8e10000",
                     "what": decode(0xB8E10000)[0], "extension": "LSE atomics (ARMv8.1-A)"}
    assert parse_report("Illegal instruction") is None


def test_a_child_dead_of_sigill_is_named_by_its_instruction() -> None:
    stderr = (report_line(0x5500A000, 0xB8E10000) + "\nqemu: uncaught target signal 4 (Illegal instruction) - core "
              "dumped\n")
    child = subprocess.CompletedProcess(["python3"], -signal.SIGILL, "", stderr)
    err = _died(child, "LiteRT", "validating m.tflite", None)
    assert "crashed (SIGILL)" in err.message and "an instruction this CPU does not have" in err.message
    assert parse_report(err.message)["extension"] == "LSE atomics (ARMv8.1-A)"
