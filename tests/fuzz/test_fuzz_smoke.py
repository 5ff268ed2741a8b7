"""The fuzz benchmark's CI smoke: mutated real files through each parser, in this process.

Every case must parse or be refused with edgekit's own error (the server's RequestError for its
request decoding), within the 10 s a case is allowed. bench/fuzz.py runs the same targets for
100,000 cases each in worker processes, where crashes and hangs are caught as well; a finding of
either becomes a regression test in tests/fuzz/test_findings.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from edgekit.testing.fuzz import TARGETS, Context, case_path, missing, mutate, programs, run_case  # noqa: E402

SEEDS = Path(__file__).resolve().parent / "seeds"
# A case costs about 4 ms here (1 ms of hypothesis, the parser the rest): the 2,000 cases of each of the
# 12 parsers take about 100 s on a 2-core machine, which the full suite's 20-minute budget has room for but
# `make test-fast` (90 s in all) does not: the full count is marked slow, and the fast suite keeps a short run of
# every parser (FAST_CASES each, a few hundred in all: seconds), so a parser change that breaks on the first
# mutations still fails there. EDGEKIT_FUZZ_SMOKE_CASES=N runs another count in the full one.
CASES = int(os.environ.get("EDGEKIT_FUZZ_SMOKE_CASES", "2000"))
FAST_CASES = 30


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Context:
    return Context(seeds=SEEDS, scratch=tmp_path_factory.mktemp("fuzz"))


@pytest.mark.fuzz
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # Pillow's bomb warnings, numpy overflow on hostile values
@pytest.mark.parametrize("name", list(TARGETS))
@pytest.mark.parametrize("cases", [pytest.param(FAST_CASES, id="short"),
                                   pytest.param(CASES, id="full", marks=pytest.mark.slow)])
def test_parser_survives_mutated_real_files(name: str, cases: int, ctx: Context) -> None:
    target = TARGETS[name]
    why = missing(target)
    if why:
        pytest.skip(why)
    files = target.seed_files(SEEDS)
    seeds = [f.read_bytes() for f in files]
    findings: list[str] = []

    @settings(max_examples=cases, database=None, deadline=None, phases=[Phase.generate], derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(programs(target))
    def case(program: dict) -> None:
        out = run_case(target, ctx, mutate(program, seeds), case_path(ctx, files, program))
        if out.verdict == "finding" and len(findings) < 5:
            findings.append(f"{out.error} at {out.where} (program {program})")

    for i, data in enumerate(seeds):  # the seeds themselves first
        out = run_case(target, ctx, data, ctx.scratch / f"seed{files[i].suffix}")
        assert out.verdict != "finding", f"seed {files[i].name}: {out.error} at {out.where}"
    case()
    assert findings == []
