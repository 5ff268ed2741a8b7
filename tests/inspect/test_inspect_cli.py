"""`edgekit inspect` on the command line: JSON alone on stdout, readable tables, exit codes, no TensorFlow."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from tflite_builder import Graph, conv_chain

from edgekit.cli import main


@pytest.fixture
def leaky(tmp_path):
    return conv_chain(tmp_path / "leaky.tflite", middle="LEAKY_RELU")


def test_json_is_alone_on_stdout(leaky, capsys):
    assert main(["inspect", str(leaky), "--json"]) == 0
    out = capsys.readouterr().out
    r = json.loads(out)
    e = r["edgetpu"]
    assert {"ops_total", "ops_on_tpu", "macs_on_tpu_fraction", "first_unsupported"} <= set(e)
    assert e["first_unsupported"]["index"] == 1 and e["first_unsupported"]["op"] == "LEAKY_RELU"
    assert (e["ops_total"], e["ops_on_tpu"]) == (3, 1)


def test_min_runtime_option(tmp_path, capsys):
    g = Graph()
    x = g.tensor("x", [1, 4, 4, 8])
    perm = g.tensor("perm", [4], "int32", data=np.array([0, 3, 1, 2]), scale=None)
    y = g.tensor("y", [1, 8, 4, 4])
    g.op("TRANSPOSE", [x, perm], [y])
    path = g.write(tmp_path / "t.tflite", [x], [y])
    assert main(["inspect", str(path), "--json", "--edgetpu-min-runtime", "13"]) == 0
    e = json.loads(capsys.readouterr().out)["edgetpu"]
    assert e["min_runtime"] == 13 and e["first_unsupported"]["code"] == "runtime_version"


def test_tables_for_people(leaky, capsys):
    assert main(["inspect", str(leaky)]) == 0
    out = capsys.readouterr().out
    for text in (
        "operators (execution order)",
        "CONV_2D",
        "LEAKY_RELU",
        "Edge TPU pre-flight",
        "1 of 3 ops",
        "partition at op 1",
        "fix: Replace LeakyReLU",
        "parameters by dtype",
    ):
        assert text in out, text


def test_errors_become_exit_codes(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "missing.tflite")]) == 2
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00" * 64)
    assert main(["inspect", str(junk)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "hint:" in err


def test_inspect_does_not_import_tensorflow_or_torch(leaky):
    code = (
        "import sys\n"
        "from edgekit.cli import main\n"
        f"rc = main(['inspect', {str(leaky)!r}, '--json'])\n"
        "heavy = sorted(m for m in ('tensorflow', 'torch', 'keras') if m in sys.modules)\n"
        "sys.stderr.write(f'RC={rc} HEAVY={heavy}\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "RC=0 HEAVY=[]" in proc.stderr, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["format"] == "tflite"
