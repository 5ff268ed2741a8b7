"""`edgekit emulate check` writes its rows as every command does (issue 38): --json the switch that prints the JSON
alone on stdout, --output / -o the file; the spelling docs/emulate.md showed before, `--json FILE`, still writes the
file, with a warning naming --output."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer

from edgekit.cli import app, main


@pytest.fixture
def emulated(monkeypatch: pytest.MonkeyPatch) -> None:
    """`edgekit emulate check` with the userland, qemu and the runs replaced: two rows, one of which differs."""
    import edgekit.emulate.compat as compat
    import edgekit.emulate.cpus as cpus
    import edgekit.emulate.launch as launch
    import edgekit.emulate.userland as userland

    rows = [SimpleNamespace(status=s, to_dict=lambda s=s: {"status": s}) for s in ("agrees", "differs")]
    monkeypatch.setattr(cpus, "emulated_cpus", lambda names: [SimpleNamespace(device="raspberry-pi-4")])
    monkeypatch.setattr(userland, "require", lambda root: SimpleNamespace(to_dict=lambda: {"suite": "bookworm"}))
    monkeypatch.setattr(launch, "Emulator", lambda cpu, land: SimpleNamespace(check=lambda: None))
    monkeypatch.setattr(compat, "check", lambda folders, *a, **k: rows if folders == [Path("out")] else [])
    monkeypatch.setattr(compat, "markdown", lambda r: "| the table |")


def test_emulate_check_json_is_the_switch_and_output_the_file(emulated: None, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    rows = {"userland": {"suite": "bookworm"}, "rows": [{"status": "agrees"}, {"status": "differs"}]}
    assert main(["emulate", "check", "out", "--json"]) == 1  # a row differs
    assert json.loads(capsys.readouterr().out) == rows  # the JSON alone on stdout, as on every command
    assert main(["emulate", "check", "out", "-o", str(tmp_path / "compat.json")]) == 1
    assert capsys.readouterr().out.strip() == "| the table |"
    assert json.loads((tmp_path / "compat.json").read_text()) == rows


@pytest.mark.parametrize("earlier", [False, True])
def test_emulate_check_json_file_still_writes_the_file(emulated: None, tmp_path: Path, earlier: bool,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The spelling docs/emulate.md showed before (`--json compat.json`, a file there or not yet) does what it did,
    with a warning naming --output."""
    target = tmp_path / "compat.json"
    if earlier:
        target.write_text(json.dumps({"userland": {}, "rows": []}))
    assert main(["emulate", "check", "out", "--on", "pi4", "--json", str(target)]) == 1
    captured = capsys.readouterr()
    assert captured.out.strip() == "| the table |"
    assert "--json is now a switch" in captured.err and f"--output {target}" in captured.err
    assert len(json.loads(target.read_text())["rows"]) == 2


def test_a_manifest_after_json_is_a_folder_not_the_old_file(emulated: None, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Only a .json that is no manifest is taken for the old --json FILE: `--json run/manifest.json` is the switch
    and a folder (here none with artifacts: exit 0, no rows), with no warning."""
    manifest = tmp_path / "run.json"
    manifest.write_text(json.dumps({"artifacts": []}))
    assert main(["emulate", "check", "--json", str(manifest)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["rows"] == [] and "deprecated" not in captured.err


def test_o_is_where_a_command_writes() -> None:
    """`-o` is --out on the commands that write a folder (convert, bench) and --output on those that write one file
    (profile, check, emulate check): never another option."""
    def walk(cmd: Any, name: str = "") -> Any:
        yield name, cmd
        for sub_name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, f"{name} {sub_name}".strip())

    owners = {name: p.opts[0] for name, cmd in walk(typer.main.get_command(app)) for p in cmd.params
              if "-o" in p.opts}
    assert owners == {"convert": "--out", "bench": "--out", "profile": "--output", "check": "--output",
                      "emulate check": "--output"}
