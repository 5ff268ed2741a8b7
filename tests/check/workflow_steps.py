"""The example GitHub workflow's own `run:` steps, run in a scratch git repository (conftest.ci_run).

The repository holds the bundled model and the example budget file. First the push-to-main steps run
(convert, bench, write the baseline), and the baseline is committed as origin/main's; then the
pull-request step (check against git:origin/main:...). The model is unchanged between the two, so the
unconditional convert and bench steps run once. Steps that only install (`pip install`) or `uses:` an
action are not run: the test environment is the install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
WORKFLOW = REPO / "examples" / "github-actions" / "edgekit-check.yml"
# The workflow's CONVERT_ARGS minus TFLite (its onnx2tf step alone costs ~15 s here) and with small
# calibration/validation sets; every other command runs as written.
CONVERT_ARGS = "--target onnx --quantize fp32,int8 --calib mnist --calib-size 50 --val-size 200"
CONVERT_OPTIONS: dict[str, Any] = {"calib": "mnist", "calib_size": 50, "val_size": 200}


@dataclass
class CiRun:
    """The scratch repository, the workflow's environment, and each step's output."""

    root: Path
    env: dict[str, str]
    steps: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    summary: Path | None = None

    @property
    def out(self) -> Path:
        return self.root / self.env["OUT"]


def workflow() -> dict[str, Any]:
    import yaml

    return yaml.safe_load(WORKFLOW.read_text())


def step_named(name: str) -> dict[str, Any]:
    return next(s for s in workflow()["jobs"]["check"]["steps"] if s.get("name") == name)


def git(root: Path, *args: str) -> None:
    who = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env={**os.environ, **who})


def run_step(run: CiRun, name: str, script: str, extra_env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
    """SCRIPT as GitHub runs a `run:` step (bash -eo pipefail) in the repository, its output kept under NAME."""
    proc = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=run.root, capture_output=True, text=True,
                          env={**run.env, **(extra_env or {})}, timeout=300)
    run.steps[name] = proc
    return proc


def steps_for(event: str, only_conditional: bool = False) -> list[dict[str, Any]]:
    """The `run:` steps that run on EVENT (their `if:` names it, or they have none); install left out.
    With ONLY_CONDITIONAL, only those whose `if:` names EVENT."""
    out = []
    for step in workflow()["jobs"]["check"]["steps"]:
        if "run" not in step or step["run"].startswith("pip install"):
            continue
        cond = step.get("if")
        if (cond is None and not only_conditional) or (cond is not None and f"'{event}'" in cond):
            out.append(step)
    return out


def run_workflow(root: Path) -> CiRun:
    (root / "models").mkdir()
    shutil.copy(REPO / "models" / "mnist_cnn.pt2", root / "models" / "mnist_cnn.pt2")
    wf = workflow()
    env = {**os.environ, **{k: str(v) for k, v in wf["env"].items()}, "CONVERT_ARGS": CONVERT_ARGS,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    shutil.copy(WORKFLOW.parent / "edgekit-budget.toml", root / env["BUDGET"])
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "model")
    run = CiRun(root=root, env=env, summary=root / "step-summary.md")
    for step in steps_for("push"):  # convert, bench, write the baseline
        proc = run_step(run, step["name"], step["run"])
        if proc.returncode != 0:
            raise AssertionError(f"{step['name']} exited {proc.returncode}: {proc.stderr[-3000:]}")
    git(root, "add", env["BASELINE"])
    git(root, "commit", "-q", "-m", "baseline")
    git(root, "update-ref", "refs/remotes/origin/main", "HEAD")
    for step in steps_for("pull_request", only_conditional=True):
        step_env = {k: str(v).replace("${{ github.base_ref }}", "main") for k, v in step.get("env", {}).items()}
        run_step(run, step["name"], step["run"], {**step_env, "GITHUB_STEP_SUMMARY": str(run.summary)})
    return run
