"""bench/zoo_mtcnn.py: the trained MTCNN nets load from the facenet-pytorch wheel, strictly, and see a face.

Why: the zoo's MTCNN rows rely on module names matching facenet-pytorch's state dicts and on the permute before
the dense layers; a wrong layer would still run, with garbage scores. Skipped where the wheel is absent (its
message names the `pip download` that gets it, which the second test checks).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
torch = pytest.importorskip("torch")
pytest.importorskip("skimage")
zoo_mtcnn = pytest.importorskip("zoo_mtcnn")


@pytest.fixture(scope="module")
def nets() -> dict:
    try:
        zoo_mtcnn.weights_source()
    except SystemExit as exc:
        pytest.skip(str(exc))
    return zoo_mtcnn.nets()


@pytest.mark.slow  # the three nets, a 1,400-crop O-Net scan of the astronaut and R-Net on 40 crops: seconds
def test_the_trained_nets_load_strictly_and_find_the_astronauts_face(nets: dict) -> None:
    box, face_p = zoo_mtcnn.astronaut_face(nets["onet"])
    assert face_p > 0.99 and 120 < (box[0] + box[2]) / 2 < 330 and 20 < (box[1] + box[3]) / 2 < 220, (box, face_p)
    img, y = zoo_mtcnn.crops(24, box, 40, seed=0)
    with torch.no_grad():
        reg, prob = nets["rnet"](torch.from_numpy(zoo_mtcnn.normalise(img)))
        pb, pp = nets["pnet"](torch.zeros(1, 3, 64, 64))
    assert tuple(reg.shape) == (40, 4) and tuple(pb.shape) == (1, 4, 27, 27) and tuple(pp.shape) == (1, 2, 27, 27)
    assert np.mean((prob[:, 1].numpy() > 0.5) == (y == 1)) >= 0.9  # trained weights, not a random init


def test_a_missing_wheel_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FACENET_PYTORCH_WHEEL", raising=False)
    monkeypatch.setattr(zoo_mtcnn, "WHEEL_GLOB", "no-such-wheel-*.whl")
    monkeypatch.setattr(zoo_mtcnn.importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(SystemExit, match="pip download --no-deps facenet-pytorch"):
        zoo_mtcnn.weights_source()
