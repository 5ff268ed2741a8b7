"""A stand-in for edgetpu_compiler: an executable script that behaves like it at its interface.

It answers --version, parses -s/-o/-m/--timeout_sec and the model path, writes
<stem>_edgetpu.tflite and a recorded .log into the -o folder and prints a recorded stdout, all
chosen by environment variables (FAKE_MODE ok|fail|hang|nomodel, FAKE_STDOUT, FAKE_LOG,
FAKE_VERSION, FAKE_ARGV to record its arguments, FAKE_CHILD for the pid of the child it forks when
hanging). It exercises edgekit's invocation, timeout and error handling, not the compiler.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "edgetpu"

STANDIN = r"""#!{python}
import os, shutil, subprocess, sys, time
from pathlib import Path

args = sys.argv[1:]
env = os.environ
if env.get("FAKE_ARGV"):
    Path(env["FAKE_ARGV"]).write_text("\n".join(args))
if args == ["--version"]:
    print("Edge TPU Compiler version " + env.get("FAKE_VERSION", "16.0.384591198"))
    sys.exit(0)
out_dir, model, i = ".", None, 0
while i < len(args):
    a = args[i]
    if a in ("-o", "--out_dir", "-m", "--min_runtime_version", "--timeout_sec"):
        if a in ("-o", "--out_dir"):
            out_dir = args[i + 1]
        i += 2
    elif a.startswith("-"):
        i += 1
    else:
        model, i = a, i + 1
mode = env.get("FAKE_MODE", "ok")
if mode == "hang":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    Path(env["FAKE_CHILD"]).write_text(str(child.pid))
    time.sleep(120)
text = Path(env["FAKE_STDOUT"]).read_text()
if mode == "fail":
    print(text, end="")
    sys.exit(1)
stem = Path(model).stem
if mode == "ok":
    shutil.copyfile(model, Path(out_dir) / (stem + "_edgetpu.tflite"))
if env.get("FAKE_LOG"):
    shutil.copyfile(env["FAKE_LOG"], Path(out_dir) / (stem + "_edgetpu.log"))
print(text, end="")
"""


def write_standin(path: Path) -> Path:
    """Write the stand-in as an executable file at PATH."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(STANDIN.replace("{python}", sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path
