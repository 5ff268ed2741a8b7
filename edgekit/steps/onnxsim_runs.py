"""onnx2tf's onnxsim passes run in one process instead of one process each.

onnx2tf 1.28.8 simplifies its input with the onnxsim command three times in a row (onnx2tf.py, line ~712,
"to fully optimize the model"), each a new process, and once more after its own shape correction (~1181).
On a ResNet-18 each command took 4.0 s, of which the simplification was 0.23 s: the rest is importing onnx,
onnxsim and onnxruntime again. Here the first command of a conversion runs up to LOOP_PASSES passes in one
child (`python -m edgekit.steps.onnxsim_runs PASSES onnxsim-args...`), each pass onnxsim's own command-line
`main`, stopping early at a fixed point (a pass that leaves the file as it was: the next would too, onnxsim
being deterministic). onnx2tf's next commands of that loop find the file as that child left it and are
answered from memory. Any other command (a file that changed since, other arguments) runs one pass in a
child of its own, as before. The passes stay in a child process: onnx2tf keeps onnxsim out of its own
process on purpose (a crash there leaves the model unsimplified, not the conversion dead).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

LOOP_PASSES = 3  # onnx2tf's `for _ in range(3)` of onnxsim commands


def is_onnxsim(args: Any) -> bool:
    return isinstance(args, list | tuple) and len(args) >= 3 and str(args[0]) == "onnxsim"


def _digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


class OnnxsimRuns:
    """The onnxsim commands of one onnx2tf conversion: the first runs the loop's passes, the loop's others are
    answered with its output while the file is as it left it."""

    def __init__(self) -> None:
        self.loop: tuple[tuple[str, ...], str | None] | None = None  # the first command and the digest it left
        self.loop_output: Any = b""
        self.answers_left = 0  # the loop's commands still to answer from memory

    def check_output(self, real: Any, args: list[str], *rest: Any, **kwargs: Any) -> Any:
        """REAL.check_output of onnxsim ARGS (`onnxsim IN OUT ...`), the passes batched as the module says."""
        key = tuple(str(a) for a in args)
        if self.answers_left and self.loop == (key, _digest(key[2])):
            self.answers_left -= 1
            return self.loop_output
        first, self.answers_left = self.loop is None, 0
        if first:
            self.loop = (key, None)  # a first command that fails ends onnx2tf's loop: the next one is not of it
        result = real.check_output([sys.executable, "-m", __name__, str(LOOP_PASSES if first else 1), *key[1:]],
                                   *rest, **kwargs)
        if first:
            self.loop, self.loop_output, self.answers_left = (key, _digest(key[2])), result, LOOP_PASSES - 1
        return result


def main(argv: list[str]) -> int:
    """PASSES then onnxsim's arguments: onnxsim's command line run PASSES times here, to a fixed point."""
    from onnxsim import main as onnxsim_main

    passes, args = int(argv[0]), argv[1:]
    same_file = len(args) >= 2 and Path(args[0]).resolve() == Path(args[1]).resolve()
    for _ in range(passes):
        before = _digest(args[1])
        sys.argv = ["onnxsim", *args]
        code = onnxsim_main()
        if code:
            return int(code)
        if same_file and _digest(args[1]) == before:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
