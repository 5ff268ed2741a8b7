"""The run meter (edgekit.measure.run_meter): the process tree's peak, and the phases a manifest records."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from edgekit.measure import run_meter


def test_the_peak_counts_what_a_child_process_holds() -> None:
    """getrusage's children figure is no help (it starts at the parent's peak): the meter sums the tree."""
    hold = 300 * 2**20
    with run_meter.metering() as meter:
        base = run_meter.tree_rss()
        child = subprocess.Popen([sys.executable, "-c", f"b = bytearray({hold}); import time; time.sleep(1.5)"])
        child.wait(timeout=30)
    assert meter.peak_tree_rss >= base + hold * 0.9
    assert run_meter.current() is None


def test_phases_add_up_and_are_nothing_outside_a_run() -> None:
    with run_meter.phase("load"):  # no meter: nothing recorded, nothing raised
        pass
    with run_meter.metering() as meter:
        for _ in range(2):
            with run_meter.phase("reference"):
                time.sleep(0.05)
        run_meter.add("calibration_data", 0.25)
    assert meter.phases["reference"] >= 0.1 and meter.phases["calibration_data"] == 0.25


@pytest.mark.slow
def test_a_manifest_accounts_for_the_run(bundled_conversion) -> None:
    run = bundled_conversion.manifest.run
    assert set(run.phases) == {"load", "calibration_data", "reference"}
    assert run.peak_tree_rss_bytes >= run.peak_rss_bytes * 0.9  # sampled: it may miss edgekit's own last spike
    steps = sum(t["seconds"] for a in bundled_conversion.artifacts for t in a.extra["steps"] if not t["shared"])
    checks = sum(a.extra["validation_seconds"] + a.extra.get("diagnosis_seconds", 0)
                 for a in bundled_conversion.artifacts)
    assert sum(run.phases.values()) + steps + checks <= run.seconds
    assert sum(a.seconds for a in bundled_conversion.artifacts) == pytest.approx(steps + checks, abs=0.05)
