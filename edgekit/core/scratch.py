"""A vendor call whose scratch files land in a temporary folder, never in the user's current folder.

Some libraries write scratch files to the current working directory by a relative name: onnxruntime's
symbolic shape inference saves `sym_shape_infer_temp.onnx` (plus its external data) there whenever
inference is incomplete, and leaves it (10.9 MB seen from one third-party ONNX). edgekit writes only
under --out and the system temp folder, so such calls run with the working directory set to a fresh
temp folder that is removed afterwards, success or failure. Paths handed to the call must be
absolute (`absolute()` here) since the current folder changes for its duration. The working
directory is process-wide: this is for edgekit's own single-threaded conversion steps.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def scratch_cwd(prefix: str = "edgekit-scratch-") -> Iterator[Path]:
    """Run the block in a fresh temporary working directory, removed (with whatever was left in it) after."""
    old = os.getcwd()
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(old)
        shutil.rmtree(folder, ignore_errors=True)


def absolute(path: str | os.PathLike[str]) -> str:
    """PATH as an absolute string, for a call that runs inside `scratch_cwd`."""
    return str(Path(path).absolute())


__all__ = ["absolute", "scratch_cwd"]
