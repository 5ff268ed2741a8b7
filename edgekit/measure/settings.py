"""How to measure: one settings record for `edgekit profile` and every row of `edgekit bench`.

Bench runs each row as `edgekit profile --json` in a child process (or in-process); both paths read
the same `MeasureSettings`, and `cli_args()` is the one mapping from settings to profile's flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgekit.core.errors import UsageError
from edgekit.core.records import Record
from edgekit.core.typed import typed_fields


@dataclass
class MeasureSettings(Record):
    """How to measure. Defaults follow common practice: 100 runs and at least 1 s, 10 warmup runs."""

    runs: int = 100
    min_seconds: float = 1.0
    warmup: int = 10
    threads: int | None = None
    batch: int = 1
    input: str | None = None  # None: random data; else "mnist", an image folder, a .npy/.npz
    raw_io: bool = False
    idle_baseline: bool = False
    idle_seconds: float = 2.0
    seed: int = 0  # of the random inputs; `edgekit profile` always uses 0

    def check(self) -> None:
        """UsageError (exit 2) for a value no measurement can use, before anything is loaded."""
        typed_fields(self)  # the Python API takes what the command line would: "5" for runs; a clear error else
        for name, value, low in (("runs", self.runs, 1), ("warmup", self.warmup, 0), ("batch", self.batch, 1)):
            if value < low:
                raise UsageError(f"--{name} must be at least {low}, got {value}.")
        if self.min_seconds < 0 or self.idle_seconds <= 0:
            raise UsageError("--min-seconds must be >= 0 and --idle-seconds > 0.")
        if self.threads is not None and self.threads < 1:
            raise UsageError(f"--threads must be at least 1, got {self.threads}.")

    def cli_args(self) -> list[str]:
        """The `edgekit profile` flags that measure with these settings."""
        args = ["--runs", str(self.runs), "--min-seconds", str(self.min_seconds), "--warmup", str(self.warmup),
                "--batch", str(self.batch)]
        if self.threads:
            args += ["--threads", str(self.threads)]
        if self.input:
            args += ["--input", self.input]
        if self.raw_io:
            args += ["--raw-io"]
        if self.idle_baseline:
            args += ["--idle-baseline", "--idle-seconds", str(self.idle_seconds)]
        return args

    def used(self, threads: int | None) -> SettingsUsed:
        """What a ProfileResult records: these settings with the thread count actually given to the runtime."""
        return SettingsUsed(runs=self.runs, min_seconds=self.min_seconds, warmup=self.warmup, threads=threads,
                            batch=self.batch, input=self.input or "random", raw_io=self.raw_io,
                            idle_baseline=self.idle_baseline)


@dataclass
class SettingsUsed(Record):
    """The `settings` object of a ProfileResult: how the figures were measured."""

    runs: int = 0
    min_seconds: float = 0.0
    warmup: int = 0
    threads: int | None = None  # as given to the runtime (the device profile's where none was asked)
    batch: int = 1
    input: str = "random"
    raw_io: bool = False
    idle_baseline: bool = False


__all__ = ["MeasureSettings", "SettingsUsed"]
