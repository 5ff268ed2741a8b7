"""`edgekit serve`'s options are ServeConfig's: the defaults read there, what was typed handed on as the config."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import edgekit.serve.server
from edgekit.cli import main
from edgekit.commands.serve import ServeOptions
from edgekit.serve.config import ServeConfig


def test_the_options_default_to_the_configs() -> None:
    config = ServeConfig()
    # --option's None (none typed) is the config's {} once parsed: what was typed is checked below
    shared = [f.name for f in dataclasses.fields(ServeOptions) if hasattr(config, f.name) and f.name != "options"]
    assert len(shared) >= 18
    assert {n: getattr(ServeOptions(), n) for n in shared} == {n: getattr(config, n) for n in shared}


def test_what_was_typed_is_the_config_the_server_gets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[Any] = []
    monkeypatch.setattr(edgekit.serve.server, "serve", lambda config: got.append(config) or 0)
    token = tmp_path / "token"
    token.write_text("s3cret-token-value\n")
    rc = main(["serve", "a.onnx", "b.tflite", "--port", "0", "-d", "cpu", "-O", "xnnpack=false", "--max-batch", "4",
               "--token-file", str(token), "--log-level", "WARNING", "--top-k", "3"])
    assert rc == 0
    (config,) = got
    assert config.paths == (Path("a.onnx"), Path("b.tflite")) and config.port == 0 and config.device == "cpu"
    assert config.options == {"xnnpack": False} and config.max_batch == 4 and config.top_k == 3
    assert config.token == "s3cret-token-value" and config.log_level == "warning"
    assert config.host == ServeConfig.host and config.workers == ServeConfig.workers  # the rest as declared
