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
    checks = sum(a.extra["validation_seconds"] + (a.diagnosis_run.seconds or 0)
                 for a in bundled_conversion.artifacts)
    assert sum(run.phases.values()) + steps + checks <= run.seconds
    assert sum(a.seconds for a in bundled_conversion.artifacts) == pytest.approx(steps + checks, abs=0.05)


_FREED_HEAP = """
import gc, json
from edgekit.measure import run_meter
from edgekit.measure.machine import current_rss
blocks = [bytes(1000) + bytes([i % 256]) for i in range(300_000)]  # 300 MB in malloc'd blocks
with run_meter.metering():
    with run_meter.phase("reference"):
        kept = blocks[::16]  # one block in 16 stays: the heap's top is not free, glibc cannot shrink it alone
        del blocks
        gc.collect()
        inside = current_rss()
    after = current_rss()
print(json.dumps([inside, after]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_a_phase_gives_what_it_freed_back_to_the_os() -> None:
    """TensorFlow and PyTorch free activations to malloc, which keeps the pages: a phase's end trims the heap."""
    import json

    out = subprocess.run([sys.executable, "-c", _FREED_HEAP], capture_output=True, text=True, timeout=60, check=True)
    inside, after = json.loads(out.stdout)
    assert inside - after > 100 * 2**20  # ~210 MB here
