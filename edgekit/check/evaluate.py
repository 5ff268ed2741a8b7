"""Current facts + baseline facts + budgets -> one CheckResult per budget check, worst first.

Each family of checks (presence, size, fidelity, detection, Edge TPU, compute, latency) is one function
over one artifact; `evaluate` runs them over every artifact of either side. A budget whose figure is not
known on a side (no labels, no baseline, no bench report) is not checked and a note says so, rather
than passing in silence.

Latency on shared CI machines is noisy, so by default it is compared as the artifact's p50/p90
relative to the reference row of the same bench run (the source model, measured on the same machine
minutes apart), not as milliseconds; the report says which was compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgekit.check.budgets import Budgets, Value
from edgekit.check.records import RANK, CheckReport, CheckResult, Unit, Verdict
from edgekit.check.snapshot import Facts, Latency, Side
from edgekit.core.errors import EXIT_CHECK
from edgekit.fidelity.detection import MIN_DETECTIONS  # plain numpy: the decoders are not imported

# The source model's p50 may differ this much between two bench runs (another CI machine) and still be the
# yardstick; beyond it, one of the runs stalled (seen: PyTorch at 0.6 ms in one run, 88 ms in the next).
DRIFT = 4.0


@dataclass
class Unchecked:
    """Budgets that did not apply, gathered over every artifact so the report says so once per reason.

    A budget file shared by a repository's classifiers and detectors sets `min_detection_recall` at the top;
    a note per classifier artifact would bury the one that matters.
    """

    reasons: dict[str, tuple[dict[str, None], dict[str, None]]] = field(default_factory=dict)

    def add(self, reason: str, keys: list[str], artifact: str) -> None:
        budget_keys, artifacts = self.reasons.setdefault(reason, ({}, {}))
        budget_keys.update(dict.fromkeys(keys))
        artifacts[artifact] = None

    def notes(self) -> list[str]:
        return [f"{', '.join(keys)} not checked for {', '.join(arts)}: {reason}"
                for reason, (keys, arts) in self.reasons.items()]


@dataclass
class Ctx:
    """One artifact's both sides, its budget, and where a check's annotation points."""

    key: str
    now: Facts | None
    base: Facts | None
    budget: dict[str, Value]
    model_file: str | None  # the source model: what a pull request changed
    notes: list[str]
    compared: set[str]
    unchecked: Unchecked = field(default_factory=Unchecked)

    def result(self, key: str, metric: str, unit: Unit, base: Any, now: Any, change: float | None, bound: str,
               ok: bool, message: str, level: str = "error", compared: str | None = None) -> CheckResult:
        v = self.budget[key]
        verdict: Verdict = "pass" if ok else ("fail" if level == "error" else "warn")
        file, line = (v.origin.file, v.origin.line) if not v.is_default else (self.model_file, None)
        return CheckResult(artifact=self.key, metric=metric, budget_key=key, unit=unit, baseline=base, now=now,
                           change=change, budget=bound, verdict=verdict, message=f"{self.key}: {message}",
                           budget_from=str(v.origin), file=file, line=line, compared=compared)

    def value(self, key: str) -> Any:
        return self.budget[key].value


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def _kb(n: float | None) -> str:
    from edgekit.core.console import human_bytes

    return human_bytes(n)


def _presence(c: Ctx) -> Iterator[CheckResult]:
    level = c.value("missing")
    if level == "off":
        return
    now, base = c.now, c.base
    if now is None and base is not None and base.status != "ok":
        return  # it failed in the baseline's run too: nothing was lost
    if now is None:
        yield c.result("missing", "present", "text", "present", "gone", None, "present", False,
                       "in the baseline but not made by this run", level)
    elif now.status != "ok":
        what = "failed to convert" if now.status == "failed" else "missing"
        yield c.result("missing", "present", "text", "present" if base else None, what, None, "present", False,
                       f"{what}: {now.failure}", level)
    else:
        yield c.result("missing", "present", "text", "present" if base else None, "present", None, "present", True,
                       "present")


def _size(c: Ctx, now: Facts) -> Iterator[CheckResult]:
    base = c.base
    size = now.size_bytes
    if size is None:
        return
    limit = c.value("max_bytes")
    if limit is not None:
        yield c.result("max_bytes", "size", "bytes", base.size_bytes if base else None, size, None,
                       f"<= {_kb(limit)}", size <= limit, f"{_kb(size)} ({size:,} bytes), budget {_kb(limit)}")
    growth = c.value("max_growth")
    if growth is not None and base is not None and base.size_bytes:
        change = size / base.size_bytes - 1
        yield c.result("max_growth", "size growth", "bytes", base.size_bytes, size, change, f"<= {_pct(growth)}",
                       change <= growth + 1e-12,
                       f"size {_kb(base.size_bytes)} -> {_kb(size)} ({_pct(change)}; {base.size_bytes:,} -> "
                       f"{size:,} bytes), budget {_pct(growth)}")


def _fidelity(c: Ctx, now: Facts) -> Iterator[CheckResult]:
    base = c.base
    if c.value("fidelity_must_pass") and now.fidelity_passed is not None:
        then = None if base is None or base.fidelity_passed is None else ("pass" if base.fidelity_passed else "fail")
        failures = "; ".join(now.fidelity_failures[:3]) or "see the manifest"
        yield c.result("fidelity_must_pass", "fidelity", "text", then, "pass" if now.fidelity_passed else "fail", None,
                       "pass", now.fidelity_passed, "passes its fidelity thresholds" if now.fidelity_passed
                       else f"misses its fidelity thresholds ({failures})")
    for key, metric, value, was in (("min_top1_agreement", "top-1 agreement", now.top1_agreement,
                                     base.top1_agreement if base else None),
                                    ("min_accuracy", "accuracy", now.accuracy, base.accuracy if base else None)):
        bound = c.value(key)
        if bound is None:
            continue
        if value is None:
            c.notes.append(f"{c.key}: {key} not checked: the manifest has no {metric} (labels are needed for "
                           "accuracy)")
            continue
        yield c.result(key, metric, "fraction", was, value, None if was is None else value - was, f">= {bound:.2%}",
                       value >= bound - 1e-12, f"{metric} {value:.2%}, budget {bound:.2%}")
    drop = c.value("max_accuracy_drop")
    if drop is None:
        return
    if now.accuracy is None:
        c.notes.append(f"{c.key}: max_accuracy_drop not checked: no accuracy (the validation data has no labels)")
        return
    pairs = [("vs source", now.reference_accuracy), ("vs baseline", base.accuracy if base else None)]
    for against, ref in pairs:
        if ref is None:
            continue
        lost = ref - now.accuracy
        yield c.result("max_accuracy_drop", f"accuracy drop {against}", "fraction", ref, now.accuracy,
                       now.accuracy - ref, f"drop <= {drop * 100:.2f} pt", lost <= drop + 1e-9,
                       f"accuracy {ref:.2%} -> {now.accuracy:.2%} {against} ({-lost * 100:+.2f} points), "
                       f"budget: a drop of at most {drop * 100:.2f} points")


NO_BOXES = ("their manifest records no detection figures (not a detector, or converted before edgekit judged "
            "detectors by their boxes): the budget does not apply")
FEW_BOXES = (f"judged on fewer than {MIN_DETECTIONS} of the source's boxes, too few to show a share (the conversion "
             "judged the raw outputs instead; validate on pictures with objects in them)")
NO_MAP = "no mAP50 (the held-out data had no labelled boxes: an .npz with a 'boxes' array gives one)"
NO_BASE_MAP = "the baseline has no mAP50 for it: mAP50 is compared with the source's only"


def _detection(c: Ctx, now: Facts) -> Iterator[CheckResult]:
    """A detector's box recall and precision (absolute), and its mAP50 drop vs the source and vs the baseline.

    mAP50 is compared both ways, as accuracy is: against the source's mAP50 on the same labelled boxes (what
    the conversion cost) and against the baseline's same artifact (what the pull request cost).
    """
    keys = [k for k in ("min_detection_recall", "min_detection_precision", "max_map_drop") if c.value(k) is not None]
    det = now.detection
    if not keys:
        return
    if det is None:
        c.unchecked.add(NO_BOXES, keys, c.key)
        return
    was = c.base.detection if c.base is not None else None
    for key, metric, value, old in (("min_detection_recall", "detection recall", det.recall,
                                     was.recall if was else None),
                                    ("min_detection_precision", "detection precision", det.precision,
                                     was.precision if was else None)):
        bound = c.value(key)
        if bound is None or value is None:
            continue
        if det.detections is not None and det.detections < MIN_DETECTIONS:
            c.unchecked.add(FEW_BOXES, [key], f"{c.key} ({det.detections} boxes)")
            continue
        of = f" of {det.output}" if det.output else ""
        yield c.result(key, metric, "fraction", old, value, None if old is None else value - old, f">= {bound:.2%}",
                       value >= bound - 1e-12, f"{metric}{of} {value:.2%} (baseline "
                       f"{'-' if old is None else format(old, '.2%')}), budget {bound:.2%}")
    drop = c.value("max_map_drop")
    if drop is None:
        return
    if det.map50 is None:
        c.unchecked.add(NO_MAP, ["max_map_drop"], c.key)
        return
    if c.base is not None and (was is None or was.map50 is None):
        c.unchecked.add(NO_BASE_MAP, ["max_map_drop vs baseline"], c.key)
    for against, ref in (("vs source", det.reference_map50), ("vs baseline", was.map50 if was else None)):
        if ref is None:
            continue
        lost = ref - det.map50
        yield c.result("max_map_drop", f"mAP50 drop {against}", "fraction", ref, det.map50, det.map50 - ref,
                       f"drop <= {drop * 100:.2f} pt", lost <= drop + 1e-9,
                       f"mAP50 {ref:.2%} -> {det.map50:.2%} {against} ({-lost * 100:+.2f} points), "
                       f"budget: a drop of at most {drop * 100:.2f} points")


def _edgetpu(c: Ctx, now: Facts) -> Iterator[CheckResult]:
    base = c.base
    tpu, was = now.edgetpu, base.edgetpu if base else None
    if tpu is None:
        if was is not None:
            c.notes.append(f"{c.key}: the baseline has Edge TPU coverage, this run none (was --target edgetpu left "
                           "out?)")
        return
    for key, metric, value, old in (
            ("min_ops_on_tpu_fraction", "ops on Edge TPU", tpu.ops_on_tpu_fraction,
             was.ops_on_tpu_fraction if was else None),
            ("min_macs_on_tpu_fraction", "MACs on Edge TPU", tpu.macs_on_tpu_fraction,
             was.macs_on_tpu_fraction if was else None)):
        bound = c.value(key)
        if bound is not None and value is not None:
            yield c.result(key, metric, "fraction", old, value, None if old is None else value - old,
                           f">= {bound:.1%}", value >= bound - 1e-12,
                           f"{metric} {value:.1%} ({tpu.source}){_partition(tpu)}, budget {bound:.1%}")
        drop = c.value("max_tpu_coverage_drop")
        if drop is not None and value is not None and old is not None:
            yield c.result("max_tpu_coverage_drop", f"{metric} vs baseline", "fraction", old, value, value - old,
                           f"drop <= {drop:.1%}", old - value <= drop + 1e-9,
                           f"{metric} {old:.1%} -> {value:.1%}{_partition(tpu)}, budget: a drop of at most {drop:.1%}")
    level = c.value("new_partition_point")
    if was is not None and level != "off":
        new = tpu.partition_index is not None and (was.partition_index is None or tpu.partition_index <
                                                   was.partition_index)
        yield c.result("new_partition_point", "partition point", "text", _where(was), _where(tpu), None,
                       "none new", not new, f"partition point {_where(was)} -> {_where(tpu)}", level)


def _where(tpu: Any) -> str:
    return "none" if tpu.partition_index is None else f"op {tpu.partition_index} ({tpu.partition_op})"


def _partition(tpu: Any) -> str:
    return "" if tpu.partition_index is None else f"; partitioned at {_where(tpu)}, the rest runs on the CPU"


def _compute(c: Ctx, now: Facts) -> Iterator[CheckResult]:
    base = c.base
    for key, metric, value, old in (("max_macs", "MACs", now.macs, base.macs if base else None),
                                    ("max_params", "parameters", now.params, base.params if base else None)):
        bound = c.value(key)
        if bound is None:
            continue
        if value is None:
            c.notes.append(f"{c.key}: {key} not checked: the file could not be inspected")
            continue
        yield c.result(key, metric, "count", old, value, None if not old else value / old - 1, f"<= {bound:,}",
                       value <= bound, f"{metric} {value:,}, budget {bound:,}")
    level = c.value("new_ops")
    if level != "off" and now.ops is not None and base is not None and base.ops is not None:
        new = sorted(set(now.ops) - set(base.ops))
        yield c.result("new_ops", "new operators", "text", f"{len(base.ops)} types", ", ".join(new) or "none", None,
                       "none", not new,
                       f"operators not in the baseline: {', '.join(new)}" if new else "no new operators", level)


def _latency(c: Ctx, now: Facts, relative: bool) -> Iterator[CheckResult]:
    """p50/p90 growth per runtime/device row. A growth over budget counts only when it is also beyond the
    baseline row's own spread (the new median slower than the old p90): within it, the two runs cannot tell."""
    base = c.base
    if base is None or not now.latency:
        return
    was_by = {lat.where: lat for lat in base.latency}
    for lat in now.latency:
        old = was_by.get(lat.where)
        if old is None:
            continue
        for key, stat in (("max_p50_growth", "p50"), ("max_p90_growth", "p90")):
            bound = c.value(key)
            pair = _latency_pair(lat, old, stat, relative) if bound is not None else None
            if pair is None:
                continue
            a, b, what = pair
            c.compared.add(what)
            change = a / b - 1
            level = c.value("latency") if c.budget[key].is_default else "error"
            over = change > bound
            noise = over and stat == "p50" and lat.p50_ms is not None and old.p90_ms is not None and \
                lat.p50_ms <= old.p90_ms
            message = f"{stat} latency on {lat.where} {_pct(change)} ({what}), budget {_pct(bound)}"
            if noise:
                message += (f"; not counted: within the baseline run's spread (p50 now {lat.p50_ms:.3f} ms <= "
                            f"baseline p90 {old.p90_ms:.3f} ms)")
            yield c.result(key, f"{stat} latency {lat.where}", "ratio" if relative else "ms", b, a, change,
                           f"<= {_pct(bound)}", not over or noise, message, level, compared=what)


def _latency_pair(now: Latency, old: Latency, stat: str, relative: bool) -> tuple[float, float, str] | None:
    if relative:
        a, b = getattr(now, f"{stat}_vs_ref"), getattr(old, f"{stat}_vs_ref")
        if a and b:
            return a, b, f"{stat} relative to the source model measured in the same bench run"
        return None
    a, b = getattr(now, f"{stat}_ms"), getattr(old, f"{stat}_ms")
    return (a, b, f"absolute {stat} in ms") if a and b else None


CHECKS: tuple[Callable[[Ctx, Facts], Iterator[CheckResult]], ...] = (_size, _fidelity, _detection, _edgetpu,
                                                                     _compute)


def evaluate(current: Side, baseline: Side | None, budgets: Budgets) -> CheckReport:
    """Every budget check of every artifact of CURRENT (and of BASELINE, for the ones that are gone)."""
    cur = current.snapshot.by_key()
    base = baseline.snapshot.by_key() if baseline else {}
    notes = list(current.notes) + [f"baseline: {n}" for n in (baseline.notes if baseline else [])]
    compared: set[str] = set()
    unchecked = Unchecked()
    relative = baseline is not None and _same_reference(current, baseline, notes)
    model_file = _model_file(current)
    results: list[CheckResult] = []
    for key in [*cur, *(k for k in base if k not in cur)]:
        facts = cur.get(key) or base[key]
        ctx = Ctx(key=key, now=cur.get(key), base=base.get(key), model_file=model_file, notes=notes,
                  compared=compared, unchecked=unchecked,
                  budget=budgets.for_artifact(facts.format, facts.precision, facts.variant))
        results.extend(_presence(ctx))
        now = ctx.now
        if now is None or now.status != "ok":
            continue
        for check in CHECKS:
            results.extend(check(ctx, now))
        results.extend(_latency(ctx, now, relative))
    notes += unchecked.notes()
    for section in budgets.unmatched([(f.format, f.precision, f.variant) for f in current.snapshot.artifacts]):
        notes.append(f"budget table '{section.pattern}' ({budgets.where}) matches no artifact of this run")
    if baseline is None:
        notes.append("no baseline: only absolute budgets were checked (growth, drops and new operators need "
                     "--baseline)")
    results.sort(key=lambda r: RANK[r.verdict])
    counts = {v: sum(1 for r in results if r.verdict == v) for v in ("fail", "warn", "pass")}
    verdict: Verdict = "fail" if counts["fail"] else ("warn" if counts["warn"] else "pass")
    return CheckReport(verdict=verdict, exit_code=EXIT_CHECK if counts["fail"] else 0, current=current.where,
                       baseline=baseline.where if baseline else None, budgets=budgets.where,
                       latency_compared=sorted(compared), counts=counts, checks=results, notes=notes)


def _same_reference(current: Side, baseline: Side, notes: list[str]) -> bool:
    """Whether latency can be compared relative to the source model: both bench runs measured it, steadily."""
    now, was = current.snapshot, baseline.snapshot
    if not (now.latency_reference and was.latency_reference):
        return False
    if now.latency_reference_kind != "source model" or was.latency_reference_kind != "source model":
        notes.append("latency compared in absolute ms: the source model was not measured in both bench runs "
                     f"(now: {now.latency_reference_kind}, baseline: {was.latency_reference_kind})")
        return False
    unsteady = [f"{name} (p50 {s.reference_p50_ms or 0:.3f} ms, p90 {s.reference_p90_ms or 0:.3f} ms)"
                for name, s in (("now", now), ("baseline", was)) if not s.reference_steady]
    drift = now.reference_p50_ms / was.reference_p50_ms if now.reference_p50_ms and was.reference_p50_ms else 1.0
    if not unsteady and not 1 / DRIFT <= drift <= DRIFT:
        unsteady.append(f"its p50 {was.reference_p50_ms:.3f} ms in the baseline, {now.reference_p50_ms:.3f} ms now")
    if unsteady:
        notes.append("latency compared in absolute ms: the source model's own row was unsteady in the bench run "
                     f"({', '.join(unsteady)}), so it is no yardstick; absolute figures on shared machines are noisy")
        return False
    return True


def _model_file(current: Side) -> str | None:
    """The source model as a path from here, for annotations: what a pull request changed."""
    src = current.snapshot.source_path
    if not src:
        return None
    for cand in (Path(src), *([current.folder / src] if current.folder else [])):
        if cand.exists():
            try:
                return str(cand.resolve().relative_to(Path.cwd().resolve()))
            except ValueError:
                return str(cand)
    return src


__all__ = ["CHECKS", "evaluate"]
