"""run_tflite judges a candidate failed only for what LiteRT does to it; a bug in edgekit on that path is raised.

The search reads None as "LiteRT could not run it" and goes on to the next recipe, so a bug that came back as None
would be one more failed recipe in the log and never seen (issue 28). No TensorFlow model is built: the bug is
raised before LiteRT is reached, and LiteRT's refusal is of a file that is not a model (milliseconds).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.core.errors import InternalError, RuntimeFailure
from edgekit.quantize.tflite import run as tflite_run
from edgekit.quantize.tflite.run import RunRequest, run_tflite

X = np.zeros((2, 4, 4, 3), np.float32)


def test_a_type_error_in_edgekit_s_code_is_raised_not_judged_a_failed_candidate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.core.cores

    def bug() -> int:
        raise TypeError("unsupported operand type(s) for +: 'int' and 'NoneType'")

    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")  # in this process, where the patch is seen
    monkeypatch.setattr(edgekit.core.cores, "usable_cores", bug)  # edgekit's own code, inside the candidate's try
    (tmp_path / "m.tflite").write_bytes(b"TFL3")
    with pytest.raises(TypeError, match="unsupported operand"):
        run_tflite([tmp_path / "m.tflite"], X)


def test_a_bug_the_child_reports_is_raised_not_retried_one_by_one(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """In the child, an exception that escapes the runtimes' border comes back as InternalError
    (edgekit.core.isolate._child): it is not a crash of one candidate to be found by running each alone."""
    import edgekit.core.isolate

    calls: list[list[str]] = []

    def child(target: str, request: RunRequest, arrays: dict, **_kw: object) -> None:
        calls.append(request.paths)
        raise InternalError("TypeError: unsupported operand type(s) (this is a bug in edgekit)")

    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    monkeypatch.setattr(edgekit.core.isolate, "run_isolated", child)
    with pytest.raises(InternalError, match="bug in edgekit"):
        run_tflite([tmp_path / "a.tflite", tmp_path / "b.tflite"], X)
    assert len(calls) == 1


def test_a_crashed_child_fails_only_the_candidate_that_crashed_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import edgekit.core.isolate

    def child(target: str, request: RunRequest, arrays: dict, **_kw: object) -> tuple[dict, dict]:
        if "bad.tflite" in " ".join(request.paths):
            raise RuntimeFailure("LiteRT crashed (SIGABRT) while running int8 candidates.")
        return {"errors": {}}, {"y0": np.ones((2, 10), np.float32)}

    monkeypatch.delenv("EDGEKIT_NO_ISOLATION", raising=False)
    monkeypatch.setattr(edgekit.core.isolate, "run_isolated", child)
    ys = run_tflite([tmp_path / "good.tflite", tmp_path / "bad.tflite"], X)
    assert ys[0] is not None and ys[1] is None


def test_a_file_litert_refuses_is_a_failed_candidate_with_litert_s_reason(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from edgekit.runtimes.litert_io import interpreter_class

    try:
        interpreter_class()
    except Exception as exc:  # noqa: BLE001 - MissingDependency: no TFLite runtime here
        pytest.skip(str(exc))
    (tmp_path / "junk.tflite").write_bytes(b"not a flatbuffer at all" * 4)
    answer, arrays = tflite_run._run_in_child(RunRequest(paths=[str(tmp_path / "junk.tflite")]), {"x": X})
    assert arrays == {} and list(answer["errors"]) == [str(tmp_path / "junk.tflite")]
    assert answer["errors"][str(tmp_path / "junk.tflite")]  # LiteRT's reason, kept with the path
    monkeypatch.setenv("EDGEKIT_NO_ISOLATION", "1")
    assert run_tflite([tmp_path / "junk.tflite"], X) == [None]
