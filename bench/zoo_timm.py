"""The zoo's timm rows (issue 41): built in a Python the user names, because timm cannot be imported beside edgekit.

Why: timm imports torchvision at import time, and the registry's torchvision does not load beside the CPU torch
edgekit installs, so timm is no edgekit dependency and the zoo's own interpreter cannot build these backbones. The
user names a Python that imports timm and torch (`bench/zoo.py run --timm-python PATH`, or $ZOO_TIMM_PYTHON); the
build child runs this file there, with no edgekit: it reads the digits the parent wrote, prepares the model as the
transformers rows are prepared (bench/zoo_prepare.py: BatchNorm statistics from the first N_BN digits, a 10-class
linear head fitted by ridge regression on the pooled features) and exports the `.pt2` the same way (NCHW, pixels in
[0, 1], dynamic batch). The `.pt2` is then converted by edgekit in its own interpreter, as every other row.

Without such a Python the rows stay "planned, not run" on the page, with NEEDS as the reason; a path that is not an
interpreter with timm and torch stops the run before anything is built, naming what is wrong and the fix.

    python bench/zoo_timm.py NAME TIMM_MODEL SIZE DIGITS_NPZ OUT_DIR   # the build child (bench/zoo.py starts it)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
NEEDS = ("needs a Python that imports timm and torch: `python bench/zoo.py run --timm-python PATH` or "
         "ZOO_TIMM_PYTHON=PATH (timm imports torchvision, which does not load beside edgekit's torch)")
PROBE = "import json, timm, torch; print(json.dumps({'timm': timm.__version__, 'torch': torch.__version__}))"


class TimmPythonError(ValueError):
    """The named interpreter cannot build the timm rows; the message says why and what to do."""


def timm_python(flag: str | None, env: dict[str, str] | None = None, env_name: str = "ZOO_TIMM_PYTHON") -> Path | None:
    """The interpreter the user named: FLAG (--timm-python), else ENV[ENV_NAME]; None where neither names one.

    A path that is no executable file raises TimmPythonError naming the path, where it came from and the fix."""
    environ = os.environ if env is None else env
    given, source = (flag, "--timm-python") if flag else (environ.get(env_name) or None, f"${env_name}")
    if not given:
        return None
    path = Path(given).expanduser()
    fix = "name the python of an environment with timm and torch, e.g. .../venv/bin/python"
    if not path.exists():
        raise TimmPythonError(f"{source} names {given}, which does not exist: {fix}")
    if path.is_dir():
        raise TimmPythonError(f"{source} names {given}, a folder, not an interpreter: {fix} (its bin/python)")
    if not os.access(path, os.X_OK):
        raise TimmPythonError(f"{source} names {given}, which is not executable: {fix}")
    return path.absolute()  # not resolved: a venv's python is a link, and resolving it would leave the venv


def probe(python: Path, timeout: float = 300.0) -> dict[str, str]:
    """The timm and torch versions PYTHON imports; TimmPythonError with its last error line where it cannot."""
    try:
        done = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True, timeout=timeout)
    except OSError as exc:
        raise TimmPythonError(f"{python} could not be started ({exc}): name a Python interpreter") from exc
    except subprocess.TimeoutExpired as exc:
        raise TimmPythonError(f"{python} took over {timeout:.0f} s to import timm and torch") from exc
    lines = [ln for ln in (done.stderr or "").splitlines() if ln.strip()]
    if done.returncode != 0:
        last = lines[-1].strip() if lines else f"exit {done.returncode}"
        raise TimmPythonError(f"{python} cannot import timm and torch ({last}): install them there "
                              "(`pip install timm torch`), or name another interpreter")
    try:
        out = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise TimmPythonError(f"{python} did not answer the version probe: is it a Python interpreter?") from exc
    return {"timm": str(out["timm"]), "torch": str(out["torch"])}


def build_command(python: Path, name: str, model: str, size: int, digits: Path, out: Path) -> list[str]:
    """The build child's command line: this file in the user's PYTHON, building timm MODEL as row NAME."""
    return [str(python), str(HERE), name, model, str(size), str(digits), str(out)]


# ----------------------------------------------------------------------------- the child (in the user's Python)


def build(name: str, model: str, size: int, digits: Path, out: Path) -> dict[str, Any]:
    """Build timm MODEL at random weights, prepare it on the digits in DIGITS (x uint8 N,S,S,3; y), export it to
    OUT/NAME.pt2 and write OUT/NAME.build.json, the record bench/zoo.py reads."""
    import numpy as np
    import timm
    import torch
    from zoo_models import N_BN  # the zoo's settings: stdlib only, no edgekit
    from zoo_prepare import export_pt2, fit_head, set_bn_stats

    t0 = time.perf_counter()
    torch.manual_seed(0)
    with np.load(digits, allow_pickle=False) as d:
        x, y = d["x"], d["y"]
    if x.shape[1:] != (size, size, 3):
        raise SystemExit(f"{digits} holds images of {x.shape[1:]}, not {size}x{size}x3")
    xt = torch.from_numpy(x.transpose(0, 3, 1, 2).astype(np.float32) / 255.0)
    # num_classes=0: timm's own head becomes the identity, the model gives its pooled pre-logits features (one
    # rule for every timm family, distillation heads included); the zoo's head is a Linear on them
    backbone = timm.create_model(model, pretrained=False, num_classes=0).eval()
    bn_layers = set_bn_stats(backbone, backbone, xt, N_BN)
    with torch.no_grad():
        feats = np.concatenate([backbone(xt[i:i + 50]).reshape(len(xt[i:i + 50]), -1).numpy()
                                for i in range(0, len(xt), 50)])
        w, b, acc = fit_head(feats, y)
        head = torch.nn.Linear(feats.shape[1], 10)
        head.weight.copy_(torch.from_numpy(w.T))
        head.bias.copy_(torch.from_numpy(b))
    classifier = torch.nn.Sequential(backbone, head).eval()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.pt2"
    batch = export_pt2(classifier, size, path)
    rec = {"file": str(path), "params": int(sum(p.numel() for p in classifier.parameters())), "layout": "NCHW",
           "pixels": "0-1", "bn_layers": bn_layers, "head": f"Linear {feats.shape[1]}->10 on timm's pooled features",
           "head_train_accuracy": acc, "batch": batch, "timm": timm.__version__, "torch": torch.__version__,
           "python": sys.version.split()[0], "seconds": round(time.perf_counter() - t0, 1)}
    (out / f"{name}.build.json").write_text(json.dumps(rec, indent=1))
    return rec


if __name__ == "__main__":
    if len(sys.argv) != 6:
        raise SystemExit(__doc__.rsplit("\n\n", 1)[-1])
    build(sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5]))
