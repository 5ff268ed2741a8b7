"""Options declared once: every ConvertOptions field reaches the CLI and the Python API from its declaration.

`edgekit convert`'s parameters are generated from the declarations (edgekit.conversion.options, and each target's
own file), and `edgekit.convert(**options)` checks its keywords against the same ones, so a field
that is missing from either, or a help text written twice and drifting, fails here.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer

from edgekit.cli import app, main
from edgekit.commands.declared import option_values
from edgekit.conversion.options import API_NAMES, FIELDS, INT8_BUDGET, OPTIONS, CommonOptions, ConvertOptions
from edgekit.core.errors import UsageError
from edgekit.core.option_field import declared
from edgekit.targets.edgetpu import EdgeTpuOptions

REPO = Path(__file__).resolve().parents[2]


def _convert_params() -> dict[str, object]:
    cmd = typer.main.get_command(app).commands["convert"]  # type: ignore[attr-defined]
    return {p.name: p for p in cmd.params}


def test_every_field_is_declared_once_with_help() -> None:
    assert set(OPTIONS) == set(FIELDS)
    for name, decl in OPTIONS.items():
        assert decl.help.strip() and FIELDS[name].metadata["help"] == decl.help, name
        assert ConvertOptions.help(name) == decl.help
        assert ConvertOptions.default(name) == getattr(ConvertOptions(), name)


def test_every_field_is_reachable_from_the_cli_with_its_name_and_help() -> None:
    params = _convert_params()
    filled = {f for d in OPTIONS.values() for f in d.form.fills}
    for name, decl in OPTIONS.items():
        if not decl.form.cli:  # no flag of its own: another option's parser fills it (input_shapes)
            assert name in filled, f"{name} has no flag and no option fills it"
            assert name not in params
            continue
        param = params[name]  # the typer parameter has the field's name: the command passes fields through
        assert decl.flag in param.opts, (name, param.opts)  # type: ignore[attr-defined]
        assert param.help == decl.help + decl.form.cli_help, name  # type: ignore[attr-defined]
    # the command's own extras are the source and --json; nothing else is written by hand
    assert set(params) - set(OPTIONS) == {"source", "json_out"}


def test_every_field_is_reachable_from_the_api_by_its_name_and_its_flags() -> None:
    for name, decl in OPTIONS.items():
        for key in decl.api_names:
            assert API_NAMES[key] == name
        if decl.form.cli:  # the flag's name is a keyword too: --out -> out=, --model -> model=
            assert decl.flag.lstrip("-").replace("-", "_") in decl.api_names
        value = getattr(ConvertOptions.from_keywords(**{decl.api_names[-1]: decl.default}), name)
        assert value == decl.default
    assert {"out", "model", "quantize", "target", "output_kind"} <= set(API_NAMES)


def test_short_flags_and_booleans_keep_their_form() -> None:
    params = _convert_params()
    opts = {name: (list(p.opts), list(p.secondary_opts)) for name, p in params.items()}  # type: ignore[attr-defined]
    assert opts["targets"] == (["--target", "-t"], [])
    assert opts["precisions"] == (["--quantize", "-q"], [])
    assert opts["out_dir"] == (["--out", "-o"], [])
    assert opts["factory"] == (["--model"], [])
    assert opts["edgetpu_fixes"] == (["--edgetpu-fixes"], ["--no-edgetpu-fixes"])
    assert opts["trust_model"] == (["--trust-model"], ["--no-trust-model"])
    assert opts["json_out"] == (["--json"], [])


def test_an_unknown_keyword_gets_a_did_you_mean() -> None:
    with pytest.raises(UsageError) as exc:
        ConvertOptions.from_keywords(edgetpu_timout=5)
    assert "no option 'edgetpu_timout'" in exc.value.message and "did you mean 'edgetpu_timeout'" in exc.value.hint
    with pytest.raises(UsageError) as exc:
        ConvertOptions.from_keywords(outt="x")
    assert "did you mean 'out'" in exc.value.hint


def test_the_api_refuses_an_option_given_twice(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="twice"):
        ConvertOptions.from_keywords(out=tmp_path, out_dir=tmp_path)
    from edgekit.conversion.pipeline import convert

    with pytest.raises(UsageError, match="twice"):
        convert(None, "onnx", target="tflite")


def test_a_string_is_parsed_by_the_options_one_parser_on_both_sides() -> None:
    typed = {"targets": "onnx,tflite", "precisions": "fp32", "input_shape": ["img:1,3,8,8"], "mean": "0.5,0.25",
             "output_kinds": ["boxes=regression"]}
    from_cli = option_values(OPTIONS.values(), typed)
    assert from_cli["targets"] == ["onnx", "tflite"] and from_cli["mean"] == [0.5, 0.25]
    assert from_cli["input_shape"] is None and from_cli["input_shapes"] == {"img": [1, 3, 8, 8]}
    assert from_cli["output_kinds"] == {"boxes": "regression"}
    api = ConvertOptions.from_keywords(target="onnx,tflite", mean="0.5,0.25", input_shape="img:1,3,8,8",
                                       output_kind="boxes=regression")
    assert {k: getattr(api, k) for k in from_cli} == from_cli
    # a value already of the field's type is taken as it is
    assert ConvertOptions.from_keywords(input_shape=[1, 3, 8, 8]).input_shape == [1, 3, 8, 8]
    with pytest.raises(UsageError, match="--mean 'a' is not a list of numbers"):
        ConvertOptions.from_keywords(mean="a")


def test_a_bad_value_on_the_command_line_is_refused_by_the_same_parser(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--mean", "a"])
    assert rc == 2 and "--mean 'a' is not a list of numbers" in capsys.readouterr().err


def test_the_edge_tpu_options_are_declared_with_their_target() -> None:
    common = {d.name for d in declared(CommonOptions)}
    edgetpu = {d.name for d in declared(EdgeTpuOptions)}
    assert edgetpu == {"edgetpu_compiler", "edgetpu_min_runtime", "edgetpu_timeout", "edgetpu_fixes"}
    assert not common & edgetpu
    assert issubclass(ConvertOptions, EdgeTpuOptions)
    with pytest.raises(UsageError, match="--edgetpu-timeout must be above 0"):
        ConvertOptions(edgetpu_timeout=0).check()
    assert ConvertOptions(edgetpu_fixes=False).to_dict()["edgetpu_fixes"] is False  # manifest keys as before


def test_a_new_targets_options_come_from_its_own_file(tmp_path: Path) -> None:
    """A target registered with one TARGETS line brings its option to --help, the API and the manifest's keys."""
    (tmp_path / "lamp_target.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass

        from edgekit.core.option_field import option
        from edgekit.targets.base import TargetSpec


        @dataclass
        class LampOptions:
            lamp_brightness: int = option(3, "How bright the lamp target glows (1-9).")


        TARGET = TargetSpec(name="lamp", help="a target that only declares options", format="onnx",
                            steps=("onnx_quantize",), precisions=("fp32",), options=LampOptions)
    '''))
    code = textwrap.dedent('''
        import contextlib, io, json, sys
        from edgekit.targets import TARGETS
        TARGETS["lamp"] = "lamp_target:TARGET"  # the one registry line, before edgekit.conversion.options gathers
        from edgekit.cli import main
        from edgekit.conversion.options import ConvertOptions
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main(["convert", "--help"])
        opts = ConvertOptions.from_keywords(lamp_brightness=7)
        print(json.dumps({"rc": rc, "help": buf.getvalue(), "value": opts.lamp_brightness,
                          "keys": list(opts.to_dict())}))
    ''')
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "200"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env=env)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0
    assert "--lamp-brightness" in got["help"] and "How bright the lamp target glows (1-9)." in got["help"]
    assert "lamp: a target that only declares options" in got["help"]
    assert got["value"] == 7 and "lamp_brightness" in got["keys"]


def test_a_target_may_not_redeclare_an_option() -> None:
    from edgekit.core.option_field import option

    @dataclasses.dataclass
    class Clash:
        batch: int = option(2, "a second batch")

    from edgekit.conversion import options as module

    saved = module.TARGET_OPTIONS
    try:
        module.TARGET_OPTIONS = (*saved, Clash)
        with pytest.raises(TypeError, match="already declared"):
            module._gather()
    finally:
        module.TARGET_OPTIONS = saved


def test_the_int8_budget_is_seconds_from_the_cli_and_the_api_and_a_negative_one_is_refused() -> None:
    from typer.testing import CliRunner

    from edgekit.cli import app

    assert ConvertOptions.from_keywords(int8_budget=90).int8_budget == 90
    # auto is the default recipe, within the default budget; plain is one flag away; inf lifts the limit (None)
    assert ConvertOptions().int8_recipe == "auto" and ConvertOptions().int8_budget == INT8_BUDGET > 0
    assert ConvertOptions.from_keywords(int8_recipe="plain").int8_recipe == "plain"
    lifted = ConvertOptions(int8_budget=float("inf"))
    lifted.check()
    assert lifted.int8_budget is None
    for bad in (-1.0, float("nan")):
        with pytest.raises(UsageError, match="--int8-budget must be a number of seconds") as exc:
            ConvertOptions(int8_budget=bad).check()
        assert exc.value.hint and "--int8-budget 120" in exc.value.hint
    result = CliRunner().invoke(app, ["convert", "--help"])
    assert "--int8-budget" in result.output
