"""edgekit.profile / edgekit.bench from Python reach devices as the CLI's --remote does (the sshd tests in
tests/remote run the CLI, which calls these functions): host specs become Remotes, and a call's options become
the device's `edgekit profile` flags."""

from __future__ import annotations

import pytest

from edgekit.core.errors import UsageError


def test_host_specs_and_remotes_are_taken_as_they_are() -> None:
    from edgekit.api.measure import _remotes
    from edgekit.remote.host import Remote
    from edgekit.remote.options import remotes

    made = remotes(["pi@10.0.0.7:2222"], python="~/venv/bin/python")[0]
    got = _remotes(["pi@raspberrypi", made])
    assert [str(r.spec.host) for r in got] == ["raspberrypi", "10.0.0.7"] and got[1] is made
    assert isinstance(_remotes("pi@raspberrypi")[0], Remote) and _remotes(None) == []


def test_a_call_s_options_become_the_device_s_flags() -> None:
    from edgekit.api.measure import _remote_flags
    from edgekit.measure.settings import MeasureSettings

    flags = _remote_flags(MeasureSettings(runs=7, min_seconds=0.5, warmup=2), "cpu", "onnxruntime", ["rapl"],
                          {"spinning": True, "graph_optimization": "basic", "input_shape": [1, 3, 32, 32],
                           "factory": "pkg.net:build", "trust_model": True}, 1000, False)
    joined = " ".join(flags)
    assert "--device cpu" in joined and "--runtime onnxruntime" in joined and "--sensor rapl" in joined
    assert "spinning=true" in joined and "graph_optimization=basic" in joined and "--macs 1000" in joined
    assert "--input-shape 1,3,32,32" in joined and "--model pkg.net:build" in joined and "--trust-model" in flags
    assert "--runs" in flags and flags[flags.index("--runs") + 1] == "7"


def test_profile_takes_one_device() -> None:
    import edgekit

    with pytest.raises(UsageError, match="one device"):
        edgekit.profile("model.onnx", remote=["pi@a", "pi@b"])
