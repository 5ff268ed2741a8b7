"""The one int8 search driver (edgekit.quantize.driver): the order, stopping at the first candidate that passes, the
float step where none does, what is kept, the records and progress lines, and --int8-budget. A fake format (its
candidates agree with the float model on a set number of samples, and each takes a set time on a fake clock) drives
the loop; one real ONNX search checks that the budget reaches the record."""

from __future__ import annotations

import types
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import edgekit.quantize.driver as driver
import edgekit.quantize.search as search
from edgekit.quantize.driver import SHARED, Built, Judging, Kept, Rules, Search, top_score
from edgekit.quantize.records import RecipeChoice

N = 200  # judged samples


def _outputs(agree: int) -> np.ndarray:
    """Class scores of N samples whose top-1 agrees with the float model's (`REF`) on the first AGREE of them."""
    q = REF.copy()
    q[agree:] = np.roll(q[agree:], 1, axis=1)
    return q


REF = np.eye(10, dtype=np.float32)[np.arange(N) % 10] * 5 + 0.01


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """A clock the fake candidates move forward: the driver's and the trial records' time."""
    now = types.SimpleNamespace(t=1000.0)
    fake = types.SimpleNamespace(perf_counter=lambda: now.t)
    monkeypatch.setattr(driver, "time", fake)
    monkeypatch.setattr(search, "time", fake)
    return now


class Fake:
    """A format: recipe NAME's candidate agrees on AGREE[NAME] samples and takes SECONDS on the clock."""

    def __init__(self, agree: dict[str, int], clock: types.SimpleNamespace, seconds: float = 10.0) -> None:
        self.agree, self.clock, self.seconds = agree, clock, seconds
        self.built: list[str] = []

    def build(self, name: str) -> Built[str] | None:
        if name not in self.agree:
            return None  # skipped: the search goes on without it
        self.clock.t += self.seconds
        self.built.append(name)
        return Built(name, _outputs(self.agree[name]))


class Floats:
    """A float step: groups a, b, c (10%, 10%, 80% of MACs); a candidate passes with b left in float."""

    name = "mixed"

    def __init__(self, fake: Fake) -> None:
        self.fake = fake
        self.missed_share: float | None = None

    def base(self, kept: Sequence[Kept]) -> int:
        return search.best(kept)

    def ranked(self, base: str) -> list[tuple[str, ...]]:
        return [("a",), ("b",), ("c",)]

    def build(self, base: str, nodes: tuple[str, ...]) -> Built[str]:
        self.fake.clock.t += self.fake.seconds
        return Built(f"mixed[{base}]", _outputs(N if "b" in nodes and self.fake.agree.get("b") else 150), nodes,
                     label=f"mixed[{base}]")

    def missed(self, share: float) -> None:
        self.missed_share = share


MACS = {"a": 10, "b": 10, "c": 80}


def _search(log: list[str], notes: list[str], budget: float | None = None, rules: Rules = SHARED) -> Search:
    return Search(Judging(REF, REF), MACS, log.append, notes, budget, rules)


def test_plain_first_then_in_order_stopping_at_the_first_that_passes(clock: types.SimpleNamespace) -> None:
    log: list[str] = []
    fake = Fake({"plain": 150, "nncf": 0, "uint8": N, "equalize": N}, clock)
    fake.agree.pop("nncf")  # a recipe the format skips (NNCF not installed): no candidate, no trial
    found = _search(log, []).run(fake, ["plain", "nncf", "uint8", "equalize"])
    assert fake.built == ["plain", "uint8"] and found.met and found.held == "uint8"
    assert [t.recipe for t in found.trials] == ["plain", "uint8"] and found.candidates == ("plain", "uint8")
    assert [t.passed for t in found.trials] == [False, True] and found.trial is found.trials[1]
    assert all(t.seconds == 10.0 for t in found.trials)  # each candidate's own time, build and judging
    assert found.budget is None  # no budget given: none recorded
    lines = [m for m in log if m.startswith("int8 recipe ") and not m.startswith("int8 recipe search")]
    assert len(lines) == 2 and "misses" in lines[0] and "meets" in lines[1]
    assert all(line.endswith("(10.0 s)") for line in lines)  # candidate, verdict, seconds: one line each
    assert log[0].startswith("int8 recipe search: plain, nncf, uint8, equalize")


def test_the_float_step_runs_where_every_recipe_misses_and_keeps_the_smallest_set_that_passes(
        clock: types.SimpleNamespace) -> None:
    fake = Fake({"plain": 150, "uint8": 180, "b": 1}, clock)  # uint8 the better base, by more than noise
    step = Floats(fake)
    found = _search([], []).run(fake, ["plain", "uint8"], [step])
    # the bisection: a alone (within the 10% budget) misses, a+b (under the cap) passes
    assert [t.recipe for t in found.trials] == ["plain", "uint8", "mixed[uint8]", "mixed[uint8]"]
    assert found.met and found.held == "mixed[uint8]" and found.trial.float_nodes == 2
    assert found.trial.macs_float_fraction == 0.2 and step.missed_share is None
    fake = Fake({"plain": 150, "uint8": 160}, clock)  # nothing passes under the cap: a float-free one is kept
    step = Floats(fake)
    found = _search([], []).run(fake, ["plain", "uint8"], [step])
    assert not found.met and found.held in ("plain", "uint8") and found.trial.float_nodes == 0
    assert step.missed_share == 0.2  # the largest share tried, under the 50% cap


def test_the_budget_stops_new_candidates_keeps_the_best_so_far_and_says_so(clock: types.SimpleNamespace) -> None:
    log: list[str] = []
    notes: list[str] = []
    fake = Fake({"plain": 100, "uint8": 190, "equalize": N}, clock)  # equalize would pass: never started
    step = Floats(fake)
    found = _search(log, notes, budget=25).run(fake, ["plain", "uint8", "equalize"], [step])
    assert fake.built == ["plain", "uint8"] and not found.met and found.held == "uint8"  # the better of the two
    # uint8 started with 15 s left (plain took 10); equalize not, with 5 left: it would have ended past the budget
    assert found.budget == {"seconds": 25, "spent_seconds": 20.0, "ended": True, "candidates": 2}
    assert step.missed_share is None  # the float step never started: no share claimed as not enough
    assert notes == ["the --int8-budget of 25 s leaves no room for another candidate after 2 candidates (20 s "
                     "spent, the slowest 10 s): the search started no more and kept the best so far"]
    assert any(m == f"int8 recipe search: {notes[0]}" for m in log)
    assert any("10 of the 25 s budget" in m for m in log if m.startswith("int8 recipe plain"))
    choice = RecipeChoice(requested="auto", chosen="uint8", config={}, met=False, judged_on="x",
                          budget=found.budget)
    assert "the --int8-budget of 25 s ended the search after 2 candidates" in choice.why_words()
    assert RecipeChoice.from_dict(choice.to_dict()) == choice
    assert "budget" not in RecipeChoice(requested="auto", chosen="plain", config={}, met=True,
                                        judged_on="x").to_dict()  # no budget: no key (older readers)
    fake = Fake({"plain": 100, "uint8": N}, clock)  # a budget of 0: the first candidate only, always tried
    found = _search([], [], budget=0).run(fake, ["plain", "uint8"])
    assert fake.built == ["plain"] and found.budget is not None and found.budget["ended"]
    fake = Fake({"plain": N}, clock)  # a search that ends within its budget says it did not end it
    found = _search([], [], budget=60).run(fake, ["plain", "uint8"])
    assert found.met and found.budget is not None and not found.budget["ended"]


def test_a_first_candidate_slower_than_the_budget_grows_it_to_afford_one_more(clock: types.SimpleNamespace) -> None:
    """A model whose plain alone takes 100 s against a 30 s budget still gets the second recipe (the strongest
    float-free one): the budget grows to BUDGET_SCALE times the first candidate's time, then stops as before."""
    notes: list[str] = []
    fake = Fake({"plain": 100, "nncf": 190, "uint8": N}, clock, seconds=100)
    found = _search([], notes, budget=30).run(fake, ["plain", "nncf", "uint8"])
    assert fake.built == ["plain", "nncf"] and found.held == "nncf"  # uint8 would have ended at 300 s, past 250
    assert found.budget == {"seconds": 30, "spent_seconds": 200.0, "ended": True, "candidates": 2,
                            "scaled_seconds": driver.BUDGET_SCALE * 100}
    assert "of 30 s (grown to 250 s: 2.5 times the first candidate's) leaves no room" in notes[0]
    choice = RecipeChoice(requested="auto", chosen="nncf", config={}, met=False, judged_on="x", budget=found.budget)
    assert "the --int8-budget of 30 s (grown to 250 s by its first candidate's time) ended" in choice.why_words()
    fake = Fake({"plain": 100, "nncf": N}, clock, seconds=100)  # a budget of 0 stays 0: the first candidate only
    assert _search([], [], budget=0).run(fake, ["plain", "nncf"]).held == "plain" and fake.built == ["plain"]
    fake = Fake({"plain": 100, "nncf": 190, "uint8": N}, clock, seconds=5)  # a fast model: the budget as given
    found = _search([], [], budget=30).run(fake, ["plain", "nncf", "uint8"])
    assert found.budget is not None and "scaled_seconds" not in found.budget and fake.built == ["plain", "nncf",
                                                                                                "uint8"]


def test_a_format_with_its_own_rules_judges_at_one_sigma_and_keeps_the_top_score(
        clock: types.SimpleNamespace) -> None:
    """OpenVINO's rules: the second candidate at 98.5% of 200 passes at one sigma, not at the shared 1.41."""
    fake = Fake({"plain": 150, "bias": 197}, clock)
    assert not _search([], []).run(fake, ["plain", "bias"]).met
    ov = Rules(growing_bound=False, keep=top_score)
    found = _search([], [], rules=ov).run(Fake({"plain": 150, "bias": 197}, clock), ["plain", "bias"])
    assert found.met and found.held == "bias"
    found = _search([], [], rules=ov).run(Fake({"plain": 150, "bias": 180}, clock), ["plain", "bias"])
    assert not found.met and found.held == "bias"  # the top score (the shared rules keep plain within noise)


def test_a_real_onnx_search_records_its_budget(spread_model: Path, samples: np.ndarray, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget of 0 s: ONNX's auto tries plain only (which misses), keeps it, and the record says the budget
    ended; the step's candidates are otherwise the ones tests/quantize/test_search.py follows."""
    from edgekit.quantize.onnx import nncf_recipe
    from edgekit.quantize.onnx.recipes import QuantData
    from edgekit.quantize.onnx.search import quantize_onnx

    monkeypatch.setattr(nncf_recipe, "available", lambda: False)
    log: list[str] = []
    choice = quantize_onnx(spread_model, tmp_path / "m.int8.onnx", QuantData("x", samples, 1, tmp_path), "auto",
                           log.append, budget=0)
    assert [t.recipe for t in choice.trials] == ["plain"] and choice.met is False and choice.chosen == "plain"
    assert choice.budget is not None and choice.budget["ended"] and choice.budget["candidates"] == 1
    assert any("--int8-budget of 0 s leaves no room for another candidate after 1 candidate" in n
               for n in choice.notes)
    assert any("keeping the best float-free one, plain" in m and "--int8-budget" in m for m in log)
    assert choice.to_dict()["budget"]["seconds"] == 0


def test_the_budget_flags_help_says_how_far_it_grows() -> None:
    """--int8-budget's help spells BUDGET_SCALE out (conversion.options stays light for --help): they must agree."""
    from edgekit.conversion.options import OPTIONS
    from edgekit.quantize.driver import BUDGET_SCALE

    assert f"grows to {BUDGET_SCALE:g} times" in OPTIONS["int8_budget"].help
