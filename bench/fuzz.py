"""Fuzz every parser of untrusted bytes edgekit owns or calls in-process; case counts and findings as JSON.

    python bench/fuzz.py                                  # every parser, 100,000 cases each (hours on 2 cores)
    python bench/fuzz.py --cases 20000 --minutes 5        # at most 20,000 cases or 5 minutes per parser
    python bench/fuzz.py --parsers inspect-onnx,manifest --json bench/results/fuzz.json
    python bench/fuzz.py --make-seeds tests/fuzz/seeds    # remake the seed files from the bundled model

The targets, the mutations (hypothesis draws a program of edits to a real seed file) and the verdict
of one case live in edgekit.testing.fuzz. Here each parser's cases run in a worker process, so what
an in-process run cannot judge is judged too:
- a crash: the worker dies by a signal (a native reader); the case it was on is kept, a new worker goes on;
- a hang: a case over 10 s is a finding; a worker silent for --kill-after seconds is killed and its case kept;
- a memory bomb: the worker runs under an address-space limit (--max-gb), so a case that tries to
  allocate gigabytes shows as a MemoryError finding instead of taking the shared machine down.
Findings are de-duplicated by error and place; the first case of each is copied into --findings, and
its case number recorded (`edgekit.testing.fuzz.expand(number, target)` gives its edits again).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO / "tests" / "fuzz" / "seeds"
SCHEMA_VERSION = 1


# ------------------------------------------------------------------ the worker (one parser, in a child)


def worker(name: str, cases: int, seed: int, seeds_dir: Path, scratch: Path, deadline: float) -> int:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from edgekit.testing.fuzz import TARGETS, Context, case_path, mutate, programs, run_case

    target = TARGETS[name]
    ctx = Context(seeds=seeds_dir, scratch=scratch)
    files = target.seed_files(seeds_dir)
    seed_bytes = [f.read_bytes() for f in files]
    done = 0

    def emit(out: Any, data: bytes, path: Path, case: Any) -> None:
        line = {"v": out.verdict, "s": round(out.seconds, 4), "e": out.error, "w": out.where, "case": case}
        if out.verdict == "finding":  # keep its bytes now: the next case overwrites the case file
            kept = scratch / f"finding-{done}{path.suffix}"
            kept.write_bytes(data)
            line["f"] = str(kept)
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()

    for i, data in enumerate(seed_bytes[: max(0, cases)]):  # each seed unmutated first: parsed or refused
        path = ctx.scratch / f"case{files[i].suffix}"
        emit(run_case(target, ctx, data, path), data, path, f"seed {files[i].name}")
        done += 1
    chunk = 0
    while done < cases and time.time() < deadline:
        n = min(1000, cases - done)

        @hseed(seed * 100_003 + chunk)
        @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(programs(target))
        def one(program: dict[str, Any]) -> None:
            nonlocal done
            if done >= cases or time.time() >= deadline:
                return
            data, path = mutate(program, seed_bytes), case_path(ctx, files, program)
            emit(run_case(target, ctx, data, path), data, path, program["case"])
            done += 1

        one()
        chunk += 1
    return 0


def _limit_memory(gb: float) -> None:
    import resource

    limit = int(gb * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


# ------------------------------------------------------------------ the parent


class Tally:
    def __init__(self, name: str, findings_dir: Path) -> None:
        self.name, self.findings_dir = name, findings_dir
        self.counts = {"ok": 0, "refused": 0, "finding": 0}
        self.crashes = self.hangs = self.restarts = 0
        self.max_case_s = 0.0
        self.findings: dict[str, dict[str, Any]] = {}

    @property
    def cases(self) -> int:
        return sum(self.counts.values()) + self.crashes + self.hangs

    def add(self, line: dict[str, Any], case_file: Path | None) -> None:
        self.counts[line["v"]] += 1
        self.max_case_s = max(self.max_case_s, float(line.get("s", 0)))
        if line["v"] == "finding":
            kind = "exception" if not line["e"].startswith("hang:") else "slow"
            self.finding(kind, line["e"], line["w"], Path(line["f"]) if line.get("f") else case_file, line.get("case"))

    def finding(self, kind: str, error: str, where: str, case_file: Path | None, case: Any = None) -> None:
        key = f"{kind}|{error.split(':')[0]}|{where}"
        entry = self.findings.setdefault(key, {"kind": kind, "error": error, "where": where, "count": 0,
                                               "case": None, "case_number": case})
        entry["count"] += 1
        if entry["case"] is None and case_file is not None and case_file.exists():
            self.findings_dir.mkdir(parents=True, exist_ok=True)
            kept = self.findings_dir / f"{self.name}-{len(self.findings)}{case_file.suffix}"
            shutil.copyfile(case_file, kept)
            entry["case"] = os.path.relpath(kept, REPO)

    def to_dict(self, seconds: float) -> dict[str, Any]:
        return {"cases": self.cases, **self.counts, "crashes": self.crashes, "hangs": self.hangs,
                "worker_restarts": self.restarts, "seconds": round(seconds, 1),
                "cases_per_s": round(self.cases / seconds, 1) if seconds else None,
                "max_case_seconds": round(self.max_case_s, 3), "findings": list(self.findings.values())}


def _reader(stream: Any, q: queue.Queue[str | None]) -> None:
    for line in stream:
        q.put(line)
    q.put(None)


def fuzz_parser(name: str, cases: int, minutes: float, seed: int, seeds_dir: Path, findings_dir: Path,
                max_gb: float, kill_after: float, log: Any) -> dict[str, Any]:
    tally = Tally(name, findings_dir)
    t0 = time.time()
    deadline = t0 + minutes * 60
    scratch = Path(tempfile.mkdtemp(prefix=f"edgekit-fuzz-{name}-", dir="/dev/shm" if Path("/dev/shm").is_dir()
                                    else None))
    last_report = 0.0
    try:
        while tally.cases < cases and time.time() < deadline:
            cmd = [sys.executable, __file__, "--worker", name, "--cases", str(cases - tally.cases),
                   "--seed", str(seed + tally.restarts), "--seeds", str(seeds_dir), "--scratch", str(scratch),
                   "--deadline", str(deadline), "--max-gb", str(max_gb)]
            child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
            q: queue.Queue[str | None] = queue.Queue()
            threading.Thread(target=_reader, args=(child.stdout, q), daemon=True).start()
            err_lines: list[str] = []
            threading.Thread(target=err_lines.extend, args=(child.stderr,), daemon=True).start()
            silent_since = time.time()
            while True:
                try:
                    line = q.get(timeout=1.0)
                except queue.Empty:
                    if time.time() - silent_since > kill_after:  # a case that never ends: kill, keep the case
                        child.kill()
                        child.wait()
                        tally.hangs += 1
                        tally.finding("hang", f"no answer in {kill_after:.0f} s", "", _current_case(scratch))
                        break
                    continue
                if line is None:
                    rc = child.wait()
                    if rc != 0:
                        tally.crashes += 1
                        how = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
                        tail = "".join(err_lines[-3:]).strip()[-300:]
                        tally.finding("crash", f"worker died ({how}) {tail}", "", _current_case(scratch))
                    break
                silent_since = time.time()
                tally.add(json.loads(line), _current_case(scratch))
                if time.time() - last_report > 30:
                    last_report = time.time()
                    log(f"  {name}: {tally.cases} cases, {tally.counts['finding']} findings, "
                        f"{tally.crashes} crashes, {tally.hangs} hangs")
            tally.restarts += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    tally.restarts -= 1  # the first start is not a restart
    return tally.to_dict(time.time() - t0)


def _current_case(scratch: Path) -> Path | None:
    files = sorted(scratch.glob("case*"), key=lambda p: p.stat().st_mtime if p.exists() else 0)
    return files[-1] if files else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parsers", default="", help="comma list (default: every parser whose module is here)")
    ap.add_argument("--cases", type=int, default=100_000, help="cases per parser (the issue's target: 100,000)")
    ap.add_argument("--minutes", type=float, default=60.0, help="at most this long per parser")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=Path, default=SEEDS)
    ap.add_argument("--json", type=Path, default=None, help="write the report here")
    ap.add_argument("--findings", type=Path, default=REPO / "bench" / "results" / "fuzz-findings")
    ap.add_argument("--max-gb", type=float, default=4.0, help="address-space limit of a worker")
    ap.add_argument("--kill-after", type=float, default=30.0, help="seconds without an answer before a worker is "
                    "killed (a case over 10 s is already a finding)")
    ap.add_argument("--make-seeds", type=Path, default=None, metavar="DIR")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--scratch", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO))
    if args.worker:
        _limit_memory(args.max_gb)
        return worker(args.worker, args.cases, args.seed, args.seeds, args.scratch, args.deadline)
    if args.make_seeds:
        from edgekit.testing.fuzz_seeds import make_seeds

        for p in make_seeds(args.make_seeds):
            print(f"{p.stat().st_size:>10,}  {p.relative_to(REPO) if p.is_relative_to(REPO) else p}")
        return 0
    from edgekit._version import __version__
    from edgekit.testing.fuzz import TARGETS, missing

    names = [n.strip() for n in args.parsers.split(",") if n.strip()] or list(TARGETS)
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "edgekit_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": os.cpu_count(),
        "settings": {"cases_per_parser": args.cases, "minutes_per_parser": args.minutes, "seed": args.seed,
                     "hang_seconds": 10, "kill_after_seconds": args.kill_after, "worker_max_gb": args.max_gb,
                     "engine": "hypothesis (mutation programs over real seed files)"},
        "parsers": {}, "skipped": {},
    }
    for name in names:
        target = TARGETS[name]
        why = missing(target)
        if why:
            report["skipped"][name] = why
            print(f"{name}: skipped: {why}")
            continue
        print(f"{name}: {target.what} ...", flush=True)
        result = fuzz_parser(name, args.cases, args.minutes, args.seed, args.seeds, args.findings, args.max_gb,
                             args.kill_after, lambda m: print(m, flush=True))
        report["parsers"][name] = {"what": target.what, **result}
        print(f"{name}: {result['cases']:,} cases in {result['seconds']} s ({result['cases_per_s']}/s): "
              f"{result['ok']:,} parsed, {result['refused']:,} refused, {result['finding']} findings, "
              f"{result['crashes']} crashes, {result['hangs']} hangs", flush=True)
        for f in result["findings"]:
            print(f"    {f['kind']}: {f['error'][:160]} at {f['where']} x{f['count']} (case {f['case']})")
        if args.json:  # written after every parser, so a long run stopped half-way still reports
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=2) + "\n")
    parsers = report["parsers"].values()
    report["totals"] = {"cases": sum(p["cases"] for p in parsers), "findings": sum(len(p["findings"]) for p in parsers),
                        "crashes": sum(p["crashes"] for p in parsers), "hangs": sum(p["hangs"] for p in parsers)}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["totals"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
