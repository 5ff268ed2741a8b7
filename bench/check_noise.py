"""How often `edgekit check`'s latency budget fires falsely on an unchanged model (issue 11's target: never).

Each round converts the bundled model and benches it twice (A, then B), exactly as CI would on two
pushes of the same commit, then runs `edgekit check B --baseline A` with the default budgets. Nothing
changed, so every latency check that does not pass is a false alarm. The script counts them, and for
the record also reports how large the round-to-round latency changes were: as `check` compares them
(each artifact's p50/p90 relative to the source model measured in the same bench run) and as raw
milliseconds (what a naive gate would compare), and how often each of a few budgets would have fired.

Usage (after `pip install -e '.[all]'`):
    python bench/check_noise.py                         # 10 rounds, ONNX fp32 + int8, JSON on stdout
    python bench/check_noise.py --rounds 3 --targets onnx,tflite --json noise.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BUDGETS = (0.10, 0.25, 0.50, 1.00)  # growth budgets whose false-alarm rate is reported


def edgekit(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "edgekit"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "edgekit.cli"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, cwd=REPO)


def convert_and_bench(out: Path, args: argparse.Namespace) -> None:
    conv = edgekit("convert", str(REPO / "models" / "mnist_cnn.pt2"), "--target", args.targets, "--quantize",
                   args.quantize, "--calib", "mnist", "--calib-size", "100", "--val-size", "200", "--out", str(out),
                   "--force")
    if conv.returncode not in (0, 10):  # 10: an Edge TPU model written but not compiled (no compiler here)
        raise SystemExit(f"edgekit convert exited {conv.returncode}: {conv.stderr[-2000:]}")
    bench = edgekit("bench", str(out))
    if bench.returncode != 0:
        raise SystemExit(f"edgekit bench exited {bench.returncode}: {bench.stderr[-2000:]}")


def raw_changes(a: Path, b: Path) -> dict[str, float]:
    """Each row's p50 change in milliseconds from bench A to bench B: what an absolute comparison sees."""
    def rows(p: Path) -> dict[str, float]:
        data = json.loads((p / "bench" / "bench.json").read_text())
        return {f"{r['label']} {r['runtime']}/{r['device']}": r["p50_ms"] for r in data["rows"]
                if r["status"] == "ok" and r.get("p50_ms") and not r["label"].startswith("source")}

    ra, rb = rows(a), rows(b)
    return {k: rb[k] / ra[k] - 1 for k in ra if k in rb}


def one_round(work: Path, i: int, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    a, b = work / f"r{i}-a", work / f"r{i}-b"
    convert_and_bench(a, args)
    convert_and_bench(b, args)
    proc = edgekit("check", str(b), "--baseline", str(a), "--format", "json")
    if proc.returncode not in (0, 7):
        raise SystemExit(f"edgekit check exited {proc.returncode}: {proc.stderr[-2000:]}")
    report = json.loads(proc.stdout)
    latency = [{k: r[k] for k in ("artifact", "metric", "change", "verdict", "budget", "compared")}
               for r in report["checks"] if r["budget_key"] in ("max_p50_growth", "max_p90_growth")]
    others = [f"{r['artifact']} {r['metric']}" for r in report["checks"]
              if r["verdict"] != "pass" and r["budget_key"] not in ("max_p50_growth", "max_p90_growth")]
    return {"round": i, "seconds": round(time.perf_counter() - t0, 1), "exit_code": proc.returncode,
            "latency_checks": latency, "latency_false_alarms": sum(r["verdict"] != "pass" for r in latency),
            "other_non_passing": others, "raw_p50_changes": raw_changes(a, b),
            "latency_compared": report["latency_compared"]}


def spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "max_abs": None, "median_abs": None}
    absolute = [abs(v) for v in values]
    return {"n": len(values), "max_abs": round(max(absolute), 4), "median_abs": round(statistics.median(absolute), 4),
            **{f"fires_at_{int(b * 100)}pct": sum(v > b for v in values) for b in BUDGETS}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10, help="Rounds of convert+bench twice, then check.")
    ap.add_argument("--targets", default="onnx", help="edgekit convert --target (default onnx).")
    ap.add_argument("--quantize", default="fp32,int8", help="edgekit convert --quantize.")
    ap.add_argument("--json", type=Path, help="Also write the JSON here.")
    args = ap.parse_args(argv)
    from edgekit.check.budgets import KEYS

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    rounds = []
    with tempfile.TemporaryDirectory(prefix="edgekit-check-noise-") as tmp:
        for i in range(args.rounds):
            rounds.append(one_round(Path(tmp), i, args))
            r = rounds[-1]
            print(f"round {i + 1}/{args.rounds}: {len(r['latency_checks'])} latency checks, "
                  f"{r['latency_false_alarms']} false alarms, exit {r['exit_code']} ({r['seconds']} s)",
                  file=sys.stderr)
    relative = [c["change"] for r in rounds for c in r["latency_checks"] if c["metric"].startswith("p50")]
    raw = [v for r in rounds for v in r["raw_p50_changes"].values()]
    checks = sum(len(r["latency_checks"]) for r in rounds)
    result = {
        "what": "edgekit check B --baseline A on the unchanged bundled model, A and B each converted and benched",
        "rounds": args.rounds, "targets": args.targets, "quantize": args.quantize,
        "default_latency_budget": {k: KEYS[k].default for k in ("max_p50_growth", "max_p90_growth", "latency")},
        "latency_checks": checks,
        "latency_false_alarms": sum(r["latency_false_alarms"] for r in rounds),
        "rounds_with_a_latency_false_alarm": sum(r["latency_false_alarms"] > 0 for r in rounds),
        "rounds_failing_for_another_reason": sum(bool(r["other_non_passing"]) for r in rounds),
        "relative_p50_change": spread(relative),
        "raw_ms_p50_change": spread(raw),
        "per_round": rounds,
    }
    text = json.dumps(result, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
