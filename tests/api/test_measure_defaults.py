"""`edgekit.profile` and `edgekit.bench` default to what `edgekit profile` and `edgekit bench` do: their keywords
read the commands' declared options (edgekit.api.options), which read the measurement records' own defaults."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import edgekit.api.measure as measure
from edgekit.api.options import BENCH, PROFILE, BenchOptions, ProfileOptions
from edgekit.measure.bench_report import BenchSettings
from edgekit.measure.settings import MeasureSettings

API_ONLY = {"quiet", "remote"}  # keywords the commands have no option for (remote: the API takes Remote objects too)


def _keyword_defaults(func_name: str) -> dict[str, ast.expr]:
    """FUNC_NAME's parameters in edgekit/api/measure.py with the expression each defaults to, as written."""
    tree = ast.parse(Path(measure.__file__).read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func_name)
    positional = fn.args.posonlyargs + fn.args.args
    pairs = list(zip(positional[len(positional) - len(fn.args.defaults):], fn.args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is not None]
    return {a.arg: d for a, d in pairs}


def test_no_default_of_an_option_is_written_again_in_the_api() -> None:
    for name in ("profile", "bench"):
        written = {k for k, d in _keyword_defaults(name).items() if isinstance(d, ast.Constant) and k not in API_ONLY}
        assert not written, f"edgekit.{name}() spells these defaults again; read them from its options: {written}"


def test_the_api_defaults_are_the_commands() -> None:
    for func, defaults, cls in ((measure.profile, PROFILE, ProfileOptions), (measure.bench, BENCH, BenchOptions)):
        params = inspect.signature(func).parameters
        shared = {f.name for f in dataclasses.fields(cls)} & set(params)
        assert len(shared) >= 10, shared
        for name in shared:
            assert params[name].default == getattr(defaults, name), (func.__name__, name)
    params = inspect.signature(measure.bench).parameters
    assert params["include_source"].default is (not BENCH.no_source) and params["local"].default is True


def test_the_options_read_the_measurement_records_defaults() -> None:
    for options, record in ((PROFILE, MeasureSettings()), (BENCH, BenchSettings())):
        for name in ("runs", "min_seconds", "warmup", "batch", "threads"):
            assert getattr(options, name) == getattr(record, name), name
    assert (BENCH.runs, BENCH.min_seconds, BENCH.warmup) == (50, 0.5, 5)  # a table has many rows: shorter
    assert (PROFILE.runs, PROFILE.min_seconds, PROFILE.warmup) == (100, 1.0, 10)
    assert BENCH.in_process is (not BenchSettings().isolate) and BENCH.no_source is (not BenchSettings().include_source)
