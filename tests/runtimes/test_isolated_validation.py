"""Native crashes stay in a child process: edgekit.core.isolate, check_artifact, and LiteRT's kernel fallback."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from bad_tflite import (
    EchoRequest,
    aborts_everywhere,
    xnnpack_refuses_builtin_aborts,
    xnnpack_refuses_builtin_runs,
)
from tflite_builder import conv_chain

from edgekit.core.errors import InternalError, RuntimeFailure, UsageError
from edgekit.core.isolate import run_isolated
from edgekit.core.records import Record
from edgekit.runtimes.litert import LiteRT
from edgekit.validation.artifact import CheckRequest, Reference, check_artifact

pytest.importorskip("ai_edge_litert")


def _ref(shape: tuple[int, ...], layout: str) -> Reference:
    x = np.random.default_rng(0).random((4, *shape), dtype=np.float32)
    return Reference(x=x, y_ref=np.zeros((4, 8), np.float32), labels=None, layout=layout, inputs_name="random")


# --- edgekit.core.isolate ------------------------------------------------------------------------------------
def test_isolate_round_trips_json_and_arrays():
    answer, arrays = run_isolated("bad_tflite:echo", EchoRequest(a=[1, 2]), {"x": np.arange(3.0)}, who="test",
                                  doing="echo")
    assert answer == {"got": {"a": [1, 2]}, "type": "EchoRequest", "names": ["x"]}  # the child got the record
    np.testing.assert_array_equal(arrays["doubled"], [0.0, 2.0, 4.0])


def test_a_request_is_a_record_never_a_dict(monkeypatch):
    """The request's one serialization (edgekit.core.isolate) takes records only: a dict, or a record class the child
    could not import, is refused before any child starts."""
    monkeypatch.setattr("subprocess.run", lambda *a, **k: pytest.fail("a child was started"))
    with pytest.raises(TypeError, match="request record"):
        run_isolated("bad_tflite:echo", {"a": [1, 2]}, who="t", doing="d")

    @dataclass(frozen=True)
    class Local(Record):
        a: int = 0

    with pytest.raises(TypeError, match="not importable"):
        run_isolated("bad_tflite:echo", Local(), who="t", doing="d")


def test_a_request_that_does_not_round_trip_is_a_bug_in_the_child():
    """Record.from_dict gives a field of the wrong type its default; for a request that would be a silent change of
    what the child does, so the rebuilt record must equal what was sent."""
    with pytest.raises(InternalError, match="did not round-trip"):
        run_isolated("bad_tflite:echo", EchoRequest(a=["one"]), {"x": np.arange(3.0)}, who="t", doing="d")


def test_isolate_turns_a_crash_into_runtime_failure():
    with pytest.raises(RuntimeFailure) as info:
        run_isolated("bad_tflite:abort", EchoRequest(), who="TestRT", doing="validating m.tflite")
    msg = info.value.message
    assert msg.startswith("TestRT crashed (SIGABRT) while validating m.tflite")
    assert "about to abort: the last words" in msg  # the child's last stderr lines


def test_isolate_reraises_edgekit_errors_and_bugs():
    with pytest.raises(UsageError) as info:
        run_isolated("bad_tflite:usage_error", EchoRequest(), who="t", doing="d")
    assert (info.value.message, info.value.hint, info.value.step, info.value.op) == (
        "bad input in the child", "fix it", "validate", "ADD")
    with pytest.raises(InternalError):
        run_isolated("bad_tflite:bug", EchoRequest(), who="t", doing="d")


# --- check_artifact -------------------------------------------------------------------------------------
def test_a_model_that_aborts_the_interpreter_fails_cleanly(tmp_path):
    bad = aborts_everywhere(tmp_path / "bad.tflite")
    with pytest.raises(RuntimeFailure) as info:
        check_artifact(bad, "tflite", "NC", "int8", _ref((8,), "NC"))
    msg = info.value.message
    assert "LiteRT crashed (SIGABRT) while validating bad.tflite" in msg
    assert "XNNPACK" in (info.value.hint or "")  # the first path's crash is said too
    # and this process is still here to say so


def test_xnnpack_refusal_then_builtin_abort_names_both(tmp_path):
    bad = xnnpack_refuses_builtin_aborts(tmp_path / "resnet_like.tflite")
    with pytest.raises(RuntimeFailure) as info:
        check_artifact(bad, "tflite", "NC", "int8", _ref((8,), "NC"))
    assert "crashed (SIGABRT)" in info.value.message and "builtin kernels" in info.value.message
    assert "failed to prepare" in (info.value.hint or "")


@pytest.mark.filterwarnings("ignore:divide by zero")  # the model's zero scales
@pytest.mark.parametrize("isolate", [True, False])
def test_xnnpack_refusal_falls_back_to_builtin_kernels(tmp_path, isolate):
    model = xnnpack_refuses_builtin_runs(tmp_path / "m.tflite")
    check = check_artifact(model, "tflite", "NC", "int8", _ref((8,), "NC"), isolate=isolate)
    assert check.kernels == "builtin"
    assert "XNNPACK" in check.notes[0] and "failed to prepare" in check.notes[0]
    assert check.notes[-1] == "validated with its builtin kernels (no delegate)"
    assert [s.name for s in check.inputs] == ["input"] and check.fidelity.samples == 4


def test_isolated_and_in_process_checks_agree(tmp_path):
    model = conv_chain(tmp_path / "conv.tflite")
    ref = _ref((8, 8, 8), "NHWC")
    y = np.random.default_rng(1).random((4, 6, 6, 4), dtype=np.float32)
    ref.y_ref = y
    a = check_artifact(model, "tflite", "NHWC", "int8", ref)
    b = check_artifact(model, "tflite", "NHWC", "int8", ref, isolate=False)
    assert a.kernels == b.kernels == "xnnpack" and not a.notes
    assert a.inputs == b.inputs and a.outputs == b.outputs
    assert a.fidelity.cosine == pytest.approx(b.fidelity.cosine)
    assert a.fidelity.max_abs_error == pytest.approx(b.fidelity.max_abs_error)


def test_no_isolation_env_runs_in_process(tmp_path, monkeypatch):
    import edgekit.core.isolate

    model = conv_chain(tmp_path / "conv.tflite")
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")
    monkeypatch.setattr(edgekit.core.isolate, "run_isolated", lambda *a, **k: pytest.fail("a child was started"))
    ref = _ref((8, 8, 8), "NHWC")
    ref.y_ref = np.zeros((4, 6, 6, 4), np.float32)
    assert check_artifact(model, "tflite", "NHWC", "int8", ref).kernels == "xnnpack"


def test_the_child_imports_only_the_runtime_library(tmp_path):
    model = conv_chain(tmp_path / "conv.tflite")
    request = CheckRequest(path=str(model), runtime="edgekit.runtimes.litert:LiteRT", layout_from="NHWC",
                           layout_to="NHWC", options={"kernels": "xnnpack"})
    x = np.zeros((2, 8, 8, 8), np.float32)
    answer, arrays = run_isolated("bad_tflite:check_and_list_modules", request, {"x": x}, who="t", doing="d")
    assert answer["heavy"] == [] and arrays["y0"].shape == (2, 6, 6, 4)  # y<i>: the i-th output


class ThreadsSeen(LiteRT):
    """LiteRT, recording the threads each load was given."""

    seen: list[int | None] = []

    def _load(self, path, device, threads, options):  # noqa: ANN001, ANN202
        ThreadsSeen.seen.append(threads)
        super()._load(path, device, threads, options)


def test_validation_runs_on_every_usable_core(tmp_path, monkeypatch):
    """LiteRT's Interpreter runs on one thread unless told: validation and the int8 search's candidate runs tell
    it the cores this process may use."""
    import edgekit.core.cores
    from edgekit.quantize.tflite.run import RunRequest, _run_in_child
    from edgekit.validation.artifact import _check_in_child

    monkeypatch.setattr(edgekit.core.cores, "usable_cores", lambda: 3)
    monkeypatch.setattr(ThreadsSeen, "seen", [])
    model = conv_chain(tmp_path / "conv.tflite")
    x = np.zeros((2, 8, 8, 8), np.float32)
    request = CheckRequest(path=str(model), runtime=f"{__name__}:ThreadsSeen", layout_from="NHWC",
                           layout_to="NHWC")
    _check_in_child(request, {"x": x})
    monkeypatch.setattr("edgekit.runtimes.runtime_for_format", lambda fmt: ThreadsSeen)
    _, out = _run_in_child(RunRequest(paths=[str(model)]), {"x": x})
    assert ThreadsSeen.seen == [3, 3] and out["y0"].shape == (2, 6, 6, 4)


# --- the LiteRT runtime's kernels option --------------------------------------------------------------
def test_litert_kernels_option(tmp_path):
    from edgekit.runtimes.litert import LiteRT

    good = conv_chain(tmp_path / "conv.tflite")
    refused = xnnpack_refuses_builtin_runs(tmp_path / "m.tflite")
    for kernels, expect in (("xnnpack", "xnnpack"), ("builtin", "builtin"), ("auto", "xnnpack")):
        with LiteRT() as rt:
            rt.load(good, kernels=kernels)
            assert rt.info()["kernels"] == expect and "kernels_note" not in rt.info()
    with LiteRT() as rt:
        rt.load(good, xnnpack=False)  # the older spelling
        assert rt.info()["kernels"] == "builtin" and rt.info()["delegates"] == []
    with LiteRT() as rt:
        rt.load(refused)  # auto, the default
        info = rt.info()
        assert info["kernels"] == "builtin" and "failed to prepare" in info["kernels_note"]
        assert rt.run({"input": np.zeros((1, 8), np.int8)})["output"].shape == (1, 8)
    with pytest.raises(RuntimeFailure, match="failed to prepare"):
        LiteRT().load(refused, kernels="xnnpack")
    with pytest.raises(UsageError, match="Choose from auto, xnnpack, builtin"):
        LiteRT().load(good, kernels="fast")


def test_crash_models_really_kill_a_plain_interpreter(tmp_path):
    """The fixtures above must keep crashing natively, or the tests above prove nothing."""
    import subprocess
    import sys

    bad = aborts_everywhere(tmp_path / "bad.tflite")
    code = ("import sys; from ai_edge_litert.interpreter import Interpreter; "
            "it = Interpreter(model_path=sys.argv[1]); it.allocate_tensors()")
    proc = subprocess.run([sys.executable, "-c", code, str(bad)], capture_output=True, timeout=120)
    assert proc.returncode < 0  # killed by a signal (SIGABRT), not an exception


