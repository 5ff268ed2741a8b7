"""The suite runs on parallel workers (make test: pytest-xdist --dist loadgroup): the tests that share a costly fixture
must share a worker, or the fixture (a real conversion, the arm64 userland, an sshd) is built once per worker."""

from __future__ import annotations

import pytest

from tests.conftest import shared_work_groups


def test_tests_sharing_a_session_or_module_fixture_share_a_group(request: pytest.FixtureRequest) -> None:
    items = list(request.session.items)
    groups = shared_work_groups(items)
    for fixture in ("bundled_conversion", "tiny_models", "every_target", "arm64_userland", "server"):
        users = [i for i in items if fixture in getattr(i, "fixturenames", ())
                 and i.nodeid.startswith("tests/")]
        assert len({groups.get(i) for i in users}) <= 1, fixture
    by_module: dict[str, set[str | None]] = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info and any(d and d[-1].scope == "module" for d in info.name2fixturedefs.values()):
            by_module.setdefault(item.nodeid.split("::")[0], set()).add(groups.get(item))
    assert all(len(g) == 1 and None not in g for g in by_module.values())
    assert groups.get(request.node) is None  # a test that shares nothing is spread on its own


def test_a_group_runs_on_one_worker(tmp_path) -> None:  # noqa: ANN001
    """The groups above only help if pytest-xdist honours them: with pytest 9.2 its loadgroup renamed node ids that
    pytest no longer reads, and grouped tests were spread over both workers. Four tests of one group, on two workers:
    one worker runs them all."""
    import subprocess
    import sys

    (tmp_path / "test_grouped.py").write_text(
        "import os\nimport pytest\n\n"
        + "".join(f"@pytest.mark.xdist_group('g')\ndef test_{i}():\n"
                  f"    open('w{i}', 'w').write(os.environ['PYTEST_XDIST_WORKER'])\n\n" for i in range(4)))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist",
                          "loadgroup", "test_grouped.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    workers = {(tmp_path / f"w{i}").read_text() for i in range(4)}
    assert len(workers) == 1, f"one group ran on {sorted(workers)}: pytest-xdist's loadgroup does not hold here"
