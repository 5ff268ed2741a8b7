"""`edgekit emulate`: the arm64 userland and a Raspberry Pi generation's core under qemu (edgekit.emulate)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from edgekit.commands.declared import argument, command, context
from edgekit.core import flags
from edgekit.core.option_field import flag, option
from edgekit.emulate.userland import DEFAULT_SUITE, MIRROR

# the flags every emulate subcommand, or two of them, take
ROOT = flag(None, "The userland's folder (default: $EDGEKIT_ARM64_ROOT, else ~/.cache/edgekit/arm64/<suite>).",
            flags=("--root",))
ON = flag("pi3,pi4,pi5", "Comma list of cores: pi3, pi4, pi5 or devices with [cpu].", flags=("--on",))


@dataclass
class SetupOptions:
    """`edgekit emulate setup`'s options."""

    root: Path | None = ROOT()
    suite: str = option(DEFAULT_SUITE, "Debian suite of the userland (its python3).", flags=("--suite",))
    mirror: str = option(MIRROR, "Debian archive to fetch from.", flags=("--mirror",))
    force: bool = flags.FORCE(help="Build it again even where one is there.")


@dataclass
class StatusOptions:
    """`edgekit emulate status`'s options."""

    root: Path | None = ROOT()
    as_json: bool = flags.JSON(help="Print the status as JSON.")


@dataclass
class CompatOptions:
    """`edgekit emulate check`'s options (the compatibility table)."""

    on: str = ON()
    inputs: str | None = flags.INPUT(help="Inputs: 'mnist', an image folder or .npy/.npz (default: uniform random in "
                                     "[0, 1)).")
    samples: int = option(8, "Inputs per artifact.", flags=("--samples",), min=1)
    as_json: bool = flags.JSON(help="Print the rows as JSON alone on stdout instead of the table.")
    output: Path | None = flags.OUTPUT(help="Also write the rows as JSON to this file (what --json FILE did).")
    root: Path | None = ROOT()


def old_json_file(folders: list[Path]) -> Path | None:
    """The file of the old `emulate check --json FILE` (before --json became the switch every command has), which
    the switch leaves among FOLDERS: the one .json there that is no manifest (not there yet, or an earlier run's
    rows). None where there is not exactly one."""
    def rows_file(p: Path) -> bool:
        if p.suffix.lower() != ".json" or p.name == "manifest.json" or p.is_dir():
            return False
        if not p.exists():
            return True
        try:
            import json

            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(data, dict) and "rows" in data and "artifacts" not in data

    found = [p for p in folders if rows_file(p)]
    return found[0] if len(found) == 1 else None


@dataclass
class RunOptions:
    """`edgekit emulate run`'s options (what follows them is the command to run)."""

    on: str = ON(..., help="The core: pi3, pi4, pi5 or a device with a [cpu] table.")
    root: Path | None = ROOT()


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Run edgekit on an emulated Raspberry Pi CPU (qemu user mode, an arm64 Debian userland).",
                        no_args_is_help=True, rich_markup_mode=None)
    app.add_typer(group, name="emulate")

    @command(group.command, SetupOptions, name="setup")
    def setup_cmd(o: SetupOptions) -> None:
        """Build the arm64 userland (about 30 s; root, debootstrap and Debian's archive): Debian's arm64 python3
        and the aarch64 wheels edgekit[serve] installs on a Pi."""
        from edgekit.core.console import err
        from edgekit.emulate.launch import binfmt_problem, enable_binfmt
        from edgekit.emulate.userland import build

        land = build(o.root, suite=o.suite, mirror=o.mirror, force=o.force, progress=lambda s: err.print(f"> {s}"))
        enable_binfmt()
        problem = binfmt_problem()
        typer.echo(f"arm64 userland: {land.root} (python {land.python}, " + ", ".join(
            f"{k} {v}" for k, v in land.packages.items() if k in ("onnxruntime", "ai-edge-litert", "numpy")) + ")")
        if problem:
            typer.echo(f"not runnable yet: {problem}", err=True)
            raise typer.Exit(2)

    @command(group.command, StatusOptions, name="status")
    def status_cmd(o: StatusOptions) -> None:
        """Whether emulated runs can start here: the userland, binfmt_misc, and the cores that can be emulated."""
        from edgekit.emulate.cpus import emulable, emulated_cpu
        from edgekit.emulate.launch import binfmt_problem
        from edgekit.emulate.userland import default_root, find

        land = find(o.root)
        where, problem = str(o.root or default_root()), binfmt_problem()
        cpus = [emulated_cpu(n) for n in emulable()]
        status = {"userland": land.to_dict() if land else None, "root": where, "binfmt_problem": problem,
                  "cpus": [c.to_dict() for c in cpus]}
        if o.as_json:
            from edgekit.core.console import print_json

            print_json(status)
            return
        typer.echo(f"userland: {land.root} (built {land.built}, python {land.python})" if land
                   else f"userland: none at {where} (sudo edgekit emulate setup)")
        typer.echo(f"binfmt_misc: {problem or 'runs aarch64 binaries through qemu-aarch64-static'}")
        for c in cpus:
            typer.echo(f"  {c.device}: {c.core} ({c.isa}) {' '.join(c.features)}")
        if land is None or problem:
            raise typer.Exit(2)

    folders = argument("folders", list[Path], "Conversion folders (or their manifest.json).")

    @command(group.command, CompatOptions, folders, name="check")
    def check_cmd(o: CompatOptions, folders: list[Path]) -> None:
        """The compatibility table: every artifact on each emulated core, against this host's run of the same file
        (runs and agrees / differs / SIGILL with the instruction / other crash). Exit 1 where a row is not 'agrees'."""
        from edgekit.core.console import err
        from edgekit.emulate.compat import check, markdown
        from edgekit.emulate.cpus import emulated_cpus
        from edgekit.emulate.launch import Emulator
        from edgekit.emulate.userland import require

        as_json, output = o.as_json, o.output
        old = old_json_file(folders) if as_json and output is None else None
        if old is not None:  # the old spelling `--json FILE` does what it did, and names the new one
            from edgekit.core.console import warn

            warn(f"`--json {old}` is deprecated: --json is now a switch that prints the rows as JSON on stdout, as "
                 f"on every other command. Write the file with --output {old} (-o).")
            folders, as_json, output = [p for p in folders if p != old], False, old
        cpus = emulated_cpus([n for n in o.on.split(",") if n.strip()])
        land = require(o.root)
        Emulator(cpus[0], land).check()
        rows = check(folders, cpus, inputs=o.inputs, samples=o.samples, progress=lambda s: err.print(f"> {s}"),
                     land=land)
        data = {"userland": land.to_dict(), "rows": [r.to_dict() for r in rows]}
        if as_json:
            from edgekit.core.console import print_json

            print_json(data)
        else:
            typer.echo(markdown(rows))
        if output is not None:
            from edgekit.core.fsutil import atomic_write_json

            atomic_write_json(output, data)
        raise typer.Exit(0 if all(r.status == "agrees" for r in rows) else 1)

    @command(group.command, RunOptions, context(), name="run",
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def run_cmd(o: RunOptions, ctx: typer.Context) -> None:
        """Run `edgekit ARGS...` on the emulated core, e.g. `edgekit emulate run --on pi4 profile m.tflite`.

        The current folder and the folders of the paths among ARGS are visible inside at their own paths.
        Timings under emulation are the emulator's, never a device's."""
        from edgekit.emulate.run import run_edgekit

        raise typer.Exit(run_edgekit(o.on, list(ctx.args), o.root))
