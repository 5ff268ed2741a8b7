"""Budget files: keys, values, patterns, precedence, line numbers, pyproject.toml, and bad input (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.check.budgets import KEYS, load_budgets
from edgekit.cli import main
from edgekit.core.errors import EXIT_USAGE, UsageError

BUDGET = """\
# budgets
max_growth = "2%"
new_ops = "error"

["tflite int8"]
max_bytes = "250 KB"
max_accuracy_drop = 0.005

["* int8"]
max_bytes = 1_000_000
min_top1_agreement = "97%"

["onnx"]
max_p50_growth = 0.25

["tflite int8-uint8io"]
max_accuracy_drop = 0.02
"""


def test_values_precedence_and_lines(tmp_path: Path) -> None:
    f = tmp_path / "edgekit-budget.toml"
    f.write_text(BUDGET)
    b = load_budgets(f)
    tfl = b.for_artifact("tflite", "int8", "int8")
    assert tfl["max_bytes"].value == 250 * 1024 and str(tfl["max_bytes"].origin) == f"{f}:6"  # exact beats wildcard
    assert tfl["max_growth"].value == pytest.approx(0.02) and tfl["max_growth"].origin.line == 2
    assert tfl["min_top1_agreement"].value == pytest.approx(0.97) and tfl["min_top1_agreement"].origin.line == 11
    assert tfl["new_ops"].value == "error" and tfl["max_accuracy_drop"].value == 0.005
    uint8io = b.for_artifact("tflite", "int8", "int8-uint8io")  # a precision pattern selects its variants too
    assert uint8io["max_bytes"].value == 250 * 1024 and uint8io["max_accuracy_drop"].value == 0.02
    onnx8 = b.for_artifact("onnx", "int8", "int8")
    assert onnx8["max_bytes"].value == 1_000_000 and onnx8["max_accuracy_drop"].value is None
    onnx = b.for_artifact("onnx", "fp32", "fp32")
    assert onnx["max_p50_growth"].value == 0.25 and onnx["max_p50_growth"].origin.line == 14
    assert onnx["max_bytes"].value is None and onnx["fidelity_must_pass"].is_default
    assert [s.pattern for s in b.unmatched([("onnx", "fp32", "fp32")])] == ["tflite int8", "* int8",
                                                                              "tflite int8-uint8io"]


def test_defaults_without_a_budget_file(tmp_path: Path) -> None:
    b = load_budgets(None, cwd=tmp_path)
    v = b.for_artifact("onnx", "fp32", "fp32")
    assert b.where == "defaults (no budget file)"
    assert {k: v[k].value for k in ("max_growth", "fidelity_must_pass", "max_tpu_coverage_drop", "missing",
                                     "new_partition_point")} == {"max_growth": 0.05, "fidelity_must_pass": True,
                                                                 "max_tpu_coverage_drop": 0.0, "missing": "error",
                                                                 "new_partition_point": "error"}
    assert all(v[k].is_default for k in KEYS)


def test_pyproject_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.edgekit.check]\nmax_growth = "1%"\n\n'
                                             '[tool.edgekit.check."onnx int8"]\nmax_bytes = 100\n')
    for b in (load_budgets(None, cwd=tmp_path), load_budgets(tmp_path / "pyproject.toml")):
        v = b.for_artifact("onnx", "int8", "int8")
        assert v["max_growth"].value == pytest.approx(0.01) and v["max_growth"].origin.line == 5
        assert v["max_bytes"].value == 100 and v["max_bytes"].origin.line == 8
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load_budgets(None, cwd=tmp_path).where.startswith("defaults")
    with pytest.raises(UsageError, match=r"no \[tool.edgekit.check\]"):
        load_budgets(tmp_path / "pyproject.toml")


@pytest.mark.parametrize(("text", "message"), [
    ('max_grwoth = "5%"\n', "unknown budget key 'max_grwoth'.*did you mean 'max_growth'"),
    ('["onnx int8"]\nmin_acuracy = 0.9\n', r"toml:2: unknown budget key 'min_acuracy'.*did you mean 'min_accuracy'"),
    ('max_growth = "five"\n', r"budget.toml:1: max_growth = 'five' is not a number or a percentage"),
    ("max_bytes = -3\n", "is not a size in bytes"),
    ('max_bytes = "12 parsecs"\n', "is not a size in bytes"),
    ("min_accuracy = 1.5\n", "between 0 and 1"),
    ("fidelity_must_pass = 1\n", "true or false"),
    ('new_ops = "loud"\n', 'one of "error", "warn", "off"'),
    ("max_macs = 1.5\n", "a whole number"),
    ('["tflight int8"]\nmax_bytes = 1\n', "no known format 'tflight'.*did you mean 'tflite'"),
    ('["onnx int9"]\nmax_bytes = 1\n', "no known precision 'int9'"),
    ("max_growth = \n", "not valid TOML"),
])
def test_bad_budget_is_exit_2_with_a_clear_message(tmp_path: Path, capsys, text: str, message: str) -> None:
    import re

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "manifest.json").write_text('{"artifacts": []}')
    budget = tmp_path / "budget.toml"
    budget.write_text(text)
    assert main(["check", str(tmp_path / "out"), "--budget", str(budget)]) == EXIT_USAGE
    err = " ".join(capsys.readouterr().err.split())
    assert re.search(message, err), err


def test_docs_budget_example_loads_and_its_table_lists_every_key(tmp_path: Path) -> None:
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "check.md").read_text()
    section = page.split("## Budgets", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```toml\n(.*?)```", section, re.S)
    (tmp_path / "b.toml").write_text(example)
    b = load_budgets(tmp_path / "b.toml")
    assert b.for_artifact("tflite", "int8", "int8")["max_bytes"].value == 250 * 1024
    documented = set(re.findall(r"^\| `([a-z0-9_]+)`(?:, `([a-z0-9_]+)`)?", section, re.M))
    assert {k for pair in documented for k in pair if k} == set(KEYS)


def test_pyproject_with_a_foreign_tool_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool]\nedgekit = 3\n')
    assert load_budgets(None, cwd=tmp_path).where.startswith("defaults")
