"""The options of `edgekit profile` and `edgekit bench`, declared once: the commands and `edgekit.profile` /
`edgekit.bench` are built from them.

Each option is one declared field (edgekit.core.option_field); a flag several commands take is the
one shared declaration of edgekit.core.flags, the --remote ones are edgekit.remote.options'. Where the
record a measurement runs on holds the default (MeasureSettings, BenchSettings) the field reads it
from there, so a default lives in one place, and the API functions' keywords default to PROFILE's and
BENCH's values (tests/api/test_measure_defaults.py fails on a default written again).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edgekit.core import flags as f
from edgekit.core.option_field import option
from edgekit.measure.bench_report import BenchSettings
from edgekit.measure.settings import MeasureSettings
from edgekit.remote.options import RemoteOptions


@dataclass
class _Profile:
    """`edgekit profile`'s own options, in the order its --help shows them (the --remote ones follow)."""

    device: str = f.DEVICE()
    runtime: str | None = f.RUNTIME()
    as_json: bool = f.JSON(help="Print the ProfileResult JSON alone on stdout.")
    runs: int = f.RUNS(MeasureSettings.runs)
    min_seconds: float = f.MIN_SECONDS(MeasureSettings.min_seconds)
    warmup: int = f.WARMUP(MeasureSettings.warmup)
    batch: int = f.BATCH(MeasureSettings.batch)
    threads: int | None = f.THREADS(MeasureSettings.threads)
    input: str | None = f.INPUT(MeasureSettings.input)
    raw_io: bool = option(MeasureSettings.raw_io, "--input data is already in the model's dtype: do not quantize.")
    idle_baseline: bool = option(MeasureSettings.idle_baseline, "Measure idle power first and subtract it.")
    idle_seconds: float = option(MeasureSettings.idle_seconds, "Duration of the idle-power measurement.")
    sensors: str | None = option(None, "Power sensors to try, comma list: rapl, nvml, hwmon, pi5 (default: the "
                                 "device's).", flags=("--sensor",))
    estimate_power: bool = option(False, "Where no sensor can be read, fill in an ESTIMATE from the device profile's "
                                  "typical_watts (labelled as such).")
    macs: int | None = option(None, "MACs per sample, where inspect cannot count them (SavedModel, PyTorch).")
    input_shape: list[int] | None = f.INPUT_SHAPE()  # convert's form: plain dims, or name:dims (one input here)
    input_shapes: dict[str, list[int]] | None = f.INPUT_SHAPES()
    model: str | None = f.MODEL()
    trust_model: bool = f.TRUST_MODEL()
    options: dict[str, object] | None = f.RUNTIME_OPTION()
    output: Path | None = f.OUTPUT()


@dataclass
class ProfileOptions(RemoteOptions, _Profile):
    """Every option of `edgekit profile`: its own, then the --remote ones."""


@dataclass
class _Bench:
    """`edgekit bench`'s own options, in the order its --help shows them (the --remote ones follow)."""

    runtimes: str | None = f.RUNTIME(help="Only these runtimes (comma list).")
    devices: str | None = f.DEVICE(None, help="Only these devices (comma list: cpu, gpu, edgetpu, tpu); default: the "
                                   "CPU and each accelerator available here.")
    out: Path | None = f.OUT()
    runs: int = f.RUNS(BenchSettings.runs, help="Minimum timed runs per row.")
    min_seconds: float = f.MIN_SECONDS(BenchSettings.min_seconds, help="Minimum timed seconds per row.")
    warmup: int = f.WARMUP(BenchSettings.warmup, help="Untimed runs per row.")
    batch: int = f.BATCH(BenchSettings.batch)
    threads: int | None = f.THREADS(BenchSettings.threads)
    no_source: bool = option(not BenchSettings.include_source, "Do not measure the source model.",
                             flags=("--no-source",))
    in_process: bool = option(not BenchSettings.isolate, "Measure every row in this process (faster start; peak "
                              "memory figures then accumulate across rows).", flags=("--in-process",))
    as_json: bool = f.JSON(help="Print the bench report JSON alone on stdout.")
    no_local: bool = option(False, "With --remote: measure on the devices only.", flags=("--no-local",))


@dataclass
class BenchOptions(RemoteOptions, _Bench):
    """Every option of `edgekit bench`: its own, then the --remote ones."""


PROFILE = ProfileOptions()  # the defaults, as `edgekit.profile()`'s keywords read them
BENCH = BenchOptions()  # the defaults, as `edgekit.bench()`'s keywords read them

__all__ = ["BENCH", "PROFILE", "BenchOptions", "ProfileOptions"]
