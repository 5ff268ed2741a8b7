"""bench/detect_int8.py's own measures (issue 37): the class branch it puts in higher precision, and the drift at the
same anchor it cross-checks validation's drift with. On the mini DFL detector (detector_models): fast."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
from detector_models import HEAD_LAYERS, dfl_detector

BENCH = Path(__file__).resolve().parents[2] / "bench" / "detect_int8.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("detect_int8_bench", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_class_branch_is_the_class_heads_and_what_feeds_only_them(tmp_path: Path) -> None:
    import onnx

    model = onnx.load(str(dfl_detector(tmp_path / "dfl.onnx", classes=3)))
    heads, branch, branches = _bench()._class_branch(model, HEAD_LAYERS, 3)
    # the box heads write 4 x 16 DFL bins, the class heads 3 channels; the trunk before them feeds both
    assert heads == ("cls_l0", "cls_l1") and set(branch) == {"cls_l0", "cls_l1"}
    assert set(branches) == set(HEAD_LAYERS)  # each feeds one head layer (itself); the trunk feeds several


def test_the_same_anchor_drift_reads_each_anchor_over_the_cut_at_its_class() -> None:
    y_ref = np.zeros((1, 6, 4), dtype=np.float32)  # 2 classes, 4 anchors
    y_ref[0, 4, 0], y_ref[0, 5, 1], y_ref[0, 4, 2] = 0.8, 0.6, 0.1  # anchor 2 under the cut, anchor 3 empty
    y = y_ref.copy()
    y[0, 4, 0], y[0, 5, 1], y[0, 4, 2] = 0.7, 0.65, 0.5
    assert abs(_bench()._anchor_drift(y_ref, y, 2, 0.25) - (0.1 + 0.05) / 2) < 1e-6
    assert _bench()._anchor_drift(y_ref * 0, y, 2, 0.25) is None
