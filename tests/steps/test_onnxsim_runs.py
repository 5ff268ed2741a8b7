"""onnx2tf's three onnxsim commands in one child: the same file, one import of onnxsim instead of three."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from edgekit.steps import onnxsim_runs
from edgekit.steps.onnxsim_runs import LOOP_PASSES, OnnxsimRuns


class Recorder:
    """Stands in for `subprocess`: records each command; EDIT(path) is what the command does to the file."""

    def __init__(self, edit: Any = None, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.edit, self.fail = edit, fail

    def check_output(self, args: list[str], *rest: Any, **kwargs: Any) -> bytes:
        self.calls.append([str(a) for a in args])
        if self.fail:
            raise subprocess.CalledProcessError(1, args)
        if self.edit is not None:
            self.edit(Path(args[5]))  # python -m module PASSES IN OUT ...
        return b"table"


def test_the_loop_s_commands_run_in_one_child_and_a_changed_file_runs_again(tmp_path: Path) -> None:
    f = tmp_path / "m.onnx"
    f.write_bytes(b"model")
    real = Recorder(edit=lambda p: p.write_bytes(p.read_bytes() + b"."))
    runs = OnnxsimRuns()
    cmd = ["onnxsim", str(f), str(f), "--skip-optimization", "fuse_attention"]
    outputs = [runs.check_output(real, cmd, stderr=subprocess.PIPE) for _ in range(LOOP_PASSES)]
    assert outputs == [b"table"] * LOOP_PASSES
    assert real.calls == [[sys.executable, "-m", "edgekit.steps.onnxsim_runs", str(LOOP_PASSES), *cmd[1:]]]
    f.write_bytes(b"shapes corrected")  # onnx2tf's later command, on the file it saved again: one pass of its own
    runs.check_output(real, cmd)
    runs.check_output(real, cmd)  # the loop's answers are spent: a command runs
    assert [c[3] for c in real.calls] == [str(LOOP_PASSES), "1", "1"]


def test_a_first_command_that_fails_is_not_answered_for_later(tmp_path: Path) -> None:
    f = tmp_path / "m.onnx"
    f.write_bytes(b"model")
    runs, cmd = OnnxsimRuns(), ["onnxsim", str(f), str(f)]
    with pytest.raises(subprocess.CalledProcessError):
        runs.check_output(Recorder(fail=True), cmd)
    real = Recorder()
    runs.check_output(real, cmd)
    runs.check_output(real, cmd)
    assert [c[3] for c in real.calls] == ["1", "1"]


def test_the_passes_stop_at_a_fixed_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnxsim

    f = tmp_path / "m.onnx"
    f.write_bytes(b"model")
    passes: list[list[str]] = []

    def fake_main() -> None:  # simplifies once, then leaves the file as it is
        passes.append(list(sys.argv))
        f.write_bytes(b"simplified")

    monkeypatch.setattr(onnxsim, "main", fake_main)
    monkeypatch.setattr(sys, "argv", ["pytest"])
    assert onnxsim_runs.main([str(LOOP_PASSES), str(f), str(f), "--no-large-tensor", "10MB"]) == 0
    assert len(passes) == 2 and passes[0] == ["onnxsim", str(f), str(f), "--no-large-tensor", "10MB"]


@pytest.mark.slow
def test_one_child_writes_what_three_onnxsim_commands_write(tmp_path: Path) -> None:
    """Real onnxsim on a model it simplifies (a constant subgraph to fold, an identity to drop)."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxsim")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "w")
    nodes = [helper.make_node("Mul", ["w", "w"], ["w2"]), helper.make_node("Transpose", ["w2"], ["wt"], perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt"], ["y0"]), helper.make_node("Identity", ["y0"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    ours, theirs = tmp_path / "ours.onnx", tmp_path / "theirs.onnx"
    onnx.save(model, str(ours))
    onnx.save(model, str(theirs))
    onnxsim_cli = str(Path(sys.executable).parent / "onnxsim")
    for _ in range(LOOP_PASSES):  # what onnx2tf did: a process per command
        subprocess.check_output([onnxsim_cli, str(theirs), str(theirs)], stderr=subprocess.PIPE)
    runs = OnnxsimRuns()
    for _ in range(LOOP_PASSES):
        runs.check_output(subprocess, ["onnxsim", str(ours), str(ours)], stderr=subprocess.PIPE)
    assert ours.read_bytes() == theirs.read_bytes()
    assert [n.op_type for n in onnx.load(str(ours)).graph.node] == ["MatMul"]  # it did simplify
