"""--output-kind's spellings for landmarks, scores and raw-anchor heads, as the CLI and the API parse them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgekit.cli import main
from edgekit.commands.declared import option_values
from edgekit.conversion.options import OPTIONS, ConvertOptions
from edgekit.core.errors import UsageError
from edgekit.fidelity.kinds import check_kind, parse_output_kinds

REPO = Path(__file__).resolve().parents[2]


def test_the_spellings_parse_to_full_kinds_on_both_sides(tmp_path: Path) -> None:
    typed = ["regressors=anchors:palm", "Identity=landmarks", "Identity_1=score", "pts=landmarks:2",
             "boxes=detection:anchors"]
    want = {"regressors": "detection:anchors:palm", "Identity": "landmarks", "Identity_1": "score",
            "pts": "landmarks:2", "boxes": "detection:anchors"}
    assert option_values(OPTIONS.values(), {"output_kinds": typed})["output_kinds"] == want
    api = ConvertOptions.from_keywords(output_kind=",".join(typed))
    api.check()
    assert api.output_kinds == want
    np.save(tmp_path / "a.npy", np.zeros((896, 4)))
    assert check_kind(f"anchors:{tmp_path / 'a.npy'}") == f"detection:anchors:{tmp_path / 'a.npy'}"


def test_a_mistyped_preset_lists_the_presets_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["convert", str(REPO / "models" / "mnist_cnn.pt2"), "--output-kind", "regressors=anchors:plam"])
    err = capsys.readouterr().err
    assert rc == 2 and "Unknown anchor preset 'plam'" in err and "did you mean 'palm'?" in err
    assert "face (face_detection_short_range.tflite, 128x128, 896 anchors)" in err and "pose (" in err
    for bad, words in (("lanmarks", "did you mean 'landmarks'"), ("landmarks:7", "values per point, 2 to 5"),
                       ("anchors:x/missing.npy", "does not exist"), ("anchors:a.bin", "neither a preset nor a file"),
                       ("score:palm", "a score takes only ':presence'"), ("classes:palm", "Unknown output kind")):
        with pytest.raises(UsageError, match=words):
            parse_output_kinds(f"out={bad}")
