"""`edgekit profile ARTIFACT`: latency, throughput, memory, compute and power of one artifact here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from edgekit.core.errors import UsageError
from edgekit.core.parse import parse_ints, parse_names
from edgekit.remote import options as ro

HELP = """Measure one artifact on one device: load time and first inference apart, untimed warmup, then
timed single-stream runs until both --runs and --min-seconds are reached; latency percentiles,
throughput at --batch, memory, achieved GMAC/s and, where a power sensor can be read, energy per
inference. --json prints the ProfileResult (schema: docs/profile.md) alone on stdout.

--device: auto, cpu, gpu, edgetpu, tpu, a device name (edgekit/measure/device_profiles/*.toml) or a .toml file.

--remote user@host: measure on that device over SSH (docs/remote.md): the artifact and its sidecar files are
copied once into the device's cache, its own edgekit measures them, and the result comes back labelled with
the device's facts. --input, --device and --option then name things on the device."""


def parse_options(items: list[str] | None) -> dict[str, Any]:
    """--option KEY=VALUE pairs for the runtime; true/false/ints become Python values."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option '{item}' is not KEY=VALUE.", hint="For example: --option xnnpack=false")
        v: Any = value.strip()
        if v.lower() in ("true", "false"):
            v = v.lower() == "true"
        elif v.lstrip("-").isdigit():
            v = int(v)
        out[key.strip()] = v
    return out


def register(app: typer.Typer) -> None:
    @app.command("profile", help=HELP)
    def profile_cmd(
        artifact: Path = typer.Argument(..., help="An artifact: .onnx, .tflite (Edge TPU compiled too), a SavedModel "
                                        "folder, or a PyTorch .pt2/.pt source."),
        device: str = typer.Option("auto", "--device", "-d", help="auto|cpu|gpu|edgetpu|tpu, a device name or a "
                                   ".toml file."),
        runtime: str | None = typer.Option(None, "--runtime", "-r", help="onnxruntime, litert, torch or tf "
                                           "(default: the format's)."),
        as_json: bool = typer.Option(False, "--json", help="Print the ProfileResult JSON alone on stdout."),
        runs: int = typer.Option(100, help="Minimum number of timed runs."),
        min_seconds: float = typer.Option(1.0, help="Minimum duration of the timed runs, in seconds."),
        warmup: int = typer.Option(10, help="Untimed runs before timing."),
        batch: int = typer.Option(1, help="Batch size (where the artifact's batch is dynamic or equal)."),
        threads: int | None = typer.Option(None, help="Runtime threads (default: the runtime's or device's)."),
        input_data: str | None = typer.Option(None, "--input", help="Real inputs: 'mnist', an image folder, a "
                                              ".npy/.npz (default: random data of the right dtype and range)."),
        raw_io: bool = typer.Option(False, help="--input data is already in the model's dtype: do not quantize."),
        idle_baseline: bool = typer.Option(False, help="Measure idle power first and subtract it."),
        idle_seconds: float = typer.Option(2.0, help="Duration of the idle-power measurement."),
        sensor: str | None = typer.Option(None, help="Power sensors to try, comma list: rapl, nvml, hwmon, pi5 "
                                          "(default: the device's)."),
        estimate_power: bool = typer.Option(False, help="Where no sensor can be read, fill in an ESTIMATE from the "
                                            "device profile's typical_watts (labelled as such)."),
        macs: int | None = typer.Option(None, help="MACs per sample, where inspect cannot count them "
                                        "(SavedModel, PyTorch)."),
        input_shape: str | None = typer.Option(None, help="Input shape for TorchScript/state_dict sources: 1,1,28,28."),
        model: str | None = typer.Option(None, "--model", help="package.module:factory for state_dict sources."),
        trust_model: bool = typer.Option(False, help="Allow pickled PyTorch modules (runs code from the file)."),
        option: list[str] | None = typer.Option(None, "--option", "-O", help="Runtime option KEY=VALUE (repeat): "
                                                "graph_optimization=basic, kernels=auto|xnnpack|builtin "
                                                "(LiteRT), xnnpack=false, api=compiled, "
                                                "edgetpu_device=usb:0, signature=NAME, tpu=NAME, fp16=true."),
        output: Path | None = typer.Option(None, "--output", "-o", help="Also write the JSON to this file."),
        remote: list[str] | None = ro.REMOTE,
        remote_python: str | None = ro.REMOTE_PYTHON,
        remote_edgekit: str | None = ro.REMOTE_EDGEKIT,
        remote_cache: str = ro.REMOTE_CACHE,
        ssh_config: Path | None = ro.SSH_CONFIG,
        identity: Path | None = ro.IDENTITY,
        ssh_option: list[str] | None = ro.SSH_OPTION,
        connect_timeout: int = ro.CONNECT_TIMEOUT,
    ) -> None:
        from edgekit.core.console import out, print_json, quiet_stdout

        opts = parse_options(option)
        if input_shape:
            opts["input_shape"] = parse_ints(input_shape, "--input-shape")
        if model:
            opts["factory"] = model
        if trust_model:
            opts["trust_model"] = True
        sensors = parse_names(sensor)
        hosts = ro.remotes(remote, remote_python, remote_edgekit, remote_cache, ssh_config, identity, ssh_option,
                           connect_timeout)
        if len(hosts) > 1:
            raise UsageError("profile measures on one device; --remote was given several.",
                             hint="Compare devices with `edgekit bench OUT --remote HOST1 --remote HOST2`.")
        from edgekit.api.measure import profile

        with quiet_stdout():  # runtimes and TF log on stdout; results go there alone
            result = profile(artifact, device, runtime=runtime, runs=runs, min_seconds=min_seconds, warmup=warmup,
                             batch=batch, threads=threads, input=input_data, raw_io=raw_io,
                             idle_baseline=idle_baseline, idle_seconds=idle_seconds, sensors=sensors,
                             estimate_power=estimate_power, macs=macs, options=opts,
                             remote=hosts[0] if hosts else None)
        data = result.to_dict()
        if output is not None:
            from edgekit.core.fsutil import atomic_write_json

            atomic_write_json(output, data)
        if as_json:
            print_json(data)
        else:
            from edgekit.report.profile import profile_table

            out.print(profile_table(result))
