"""The tf runtime (SavedModel): signatures, Cloud TPU detection and its absent path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edgekit.core.errors import NotAvailable, UsageError
from edgekit.runtimes import tf as tfmod
from edgekit.runtimes.tf import TFRuntime

pytest.importorskip("tensorflow")


def test_missing_signature_lists_the_others(tiny_models: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="no signature 'predict'") as err:
        TFRuntime().load(tiny_models["models"]["savedmodel"], signature="predict")
    assert "serving_default" in err.value.hint


def test_tpu_signals_from_a_tpu_vm_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("TPU_NAME", "COLAB_TPU_ADDR", "TPU_ACCELERATOR_TYPE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(tfmod, "available", lambda m: False)
    assert tfmod.tpu_signals(tmp_path) == []
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/accel0").write_text("")
    monkeypatch.setenv("TPU_NAME", "my-tpu")
    assert tfmod.tpu_signals(tmp_path) == ["$TPU_NAME", str(tmp_path / "dev/accel0")]


def test_no_tpu_here_is_not_available_without_network(tiny_models: dict[str, Any],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tfmod, "tpu_signals", lambda root="/": [])
    ok, why = TFRuntime.available("tpu")
    assert not ok and "no Cloud TPU here" in why
    with pytest.raises(NotAvailable) as err:
        TFRuntime().load(tiny_models["models"]["savedmodel"], device="tpu")
    assert "TPU" in err.value.hint


def test_tpu_resolver_failure_is_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a TPU signal but no reachable TPU, the resolver's error becomes NotAvailable."""
    import tensorflow as tf

    def resolver(tpu: str = "") -> None:
        raise ValueError(f"Could not lookup TPU metadata for '{tpu}'")

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", resolver)
    with pytest.raises(NotAvailable, match="No Cloud TPU could be reached"):
        TFRuntime._tpu_strategy(tf, "node-1")
