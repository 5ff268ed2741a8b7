"""`edgekit profile ARTIFACT`: latency, throughput, memory, compute and power of one artifact here."""

from __future__ import annotations

from pathlib import Path

import typer

from edgekit.api.options import ProfileOptions
from edgekit.commands.declared import argument, command
from edgekit.core.errors import UsageError
from edgekit.core.parse import parse_names

HELP = """Measure one artifact on one device: load time and first inference apart, untimed warmup, then
timed single-stream runs until both --runs and --min-seconds are reached; latency percentiles,
throughput at --batch, memory, achieved GMAC/s and, where a power sensor can be read, energy per
inference. --json prints the ProfileResult (schema: docs/profile.md) alone on stdout.

--device: auto, cpu, gpu, edgetpu, tpu, a device name (edgekit/measure/device_profiles/*.toml) or a .toml file.

--remote user@host: measure on that device over SSH (docs/remote.md): the artifact and its sidecar files are
copied once into the device's cache, its own edgekit measures them, and the result comes back labelled with
the device's facts. --input, --device and --option then name things on the device."""


def one_shape(plain: list[int] | None, named: dict[str, list[int]] | None) -> list[int] | None:
    """The one input shape profile gives a PyTorch source (which has one input) from --input-shape as convert takes
    it: plain dims, or name:dims once (the dims; a torch module's input is named by the module)."""
    if not named:
        return plain
    if len(named) > 1:
        raise UsageError(f"profile takes the shape of one input; --input-shape named {len(named)}: "
                         f"{', '.join(named)}.", hint="Profile a model with several inputs as an .onnx or .tflite "
                         "artifact (they record their shapes), or give one shape: --input-shape 1,3,224,224.")
    return next(iter(named.values()))


def register(app: typer.Typer) -> None:
    artifact = argument("artifact", Path, "An artifact: .onnx, .tflite (Edge TPU compiled too), a SavedModel folder, "
                        "or a PyTorch .pt2/.pt source.")

    @command(app.command, ProfileOptions, artifact, name="profile", help=HELP)
    def profile_cmd(o: ProfileOptions, artifact: Path) -> None:
        from edgekit.core.console import out, print_json, quiet_stdout

        opts = dict(o.options or {})
        shape = one_shape(o.input_shape, o.input_shapes)
        if shape:
            opts["input_shape"] = shape
        if o.model:
            opts["factory"] = o.model
        if o.trust_model:
            opts["trust_model"] = True
        hosts = o.remotes()
        if len(hosts) > 1:
            raise UsageError("profile measures on one device; --remote was given several.",
                             hint="Compare devices with `edgekit bench OUT --remote HOST1 --remote HOST2`.")
        from edgekit.api.measure import profile

        with quiet_stdout():  # runtimes and TF log on stdout; results go there alone
            result = profile(artifact, o.device, runtime=o.runtime, runs=o.runs, min_seconds=o.min_seconds,
                             warmup=o.warmup, batch=o.batch, threads=o.threads, input=o.input, raw_io=o.raw_io,
                             idle_baseline=o.idle_baseline, idle_seconds=o.idle_seconds,
                             sensors=parse_names(o.sensors), estimate_power=o.estimate_power, macs=o.macs,
                             options=opts, remote=hosts[0] if hosts else None)
        data = result.to_dict()
        if o.output is not None:
            from edgekit.core.fsutil import atomic_write_json

            atomic_write_json(o.output, data)
        if o.as_json:
            print_json(data)
        else:
            from edgekit.report.profile import profile_table

            out.print(profile_table(result))
