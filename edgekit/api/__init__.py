"""edgekit's Python API: the names users import from `edgekit`, listed once (PUBLIC), and what they do.

- convert.py: `edgekit.convert(model, ...)`: a model file or the model object in memory -> a Conversion
- result.py: `Conversion` (artifacts, manifest, Edge TPU state, table), `open_run(folder)`
- artifact.py: `ConvertedArtifact`: one artifact's record, `load()`, `inspect()`, `profile()`
- runnable.py: `LoadedModel`: an artifact in its runtime, called on numpy arrays, outputs by name
- measure.py: `edgekit.profile`, `edgekit.bench`, `edgekit.load`
- progress.py: the live display / plain lines / quiet for every call that reports progress
- handles.py, html.py: what the API's objects stand for on disk; tables as HTML for Jupyter

`edgekit.check` and `edgekit.inspect` are the functions `check` / `inspect` of those packages, which are
callable as them (edgekit.core.handles). Nothing here imports torch or TensorFlow at import time.

PUBLIC maps each public name to "module:attr" ("module" alone: the package itself, callable). The
package root resolves a name on first use, so `import edgekit` stays light; tests/api/test_public_names.py
fails when a name disappears from this table or stops resolving. Adding a name is fine; removing or
renaming one breaks users, so it needs a deprecation first.
"""

from __future__ import annotations

PUBLIC: dict[str, str] = {
    # functions
    "convert": "edgekit.api.convert:convert",
    "load": "edgekit.api.measure:load",
    "profile": "edgekit.api.measure:profile",
    "bench": "edgekit.api.measure:bench",
    "check": "edgekit.check",  # the package, callable as edgekit.check.check
    "inspect": "edgekit.inspect",  # the package, callable as edgekit.inspect.inspect
    "open_run": "edgekit.api.result:open_run",
    # what they return
    "Conversion": "edgekit.api.result:Conversion",
    "ConvertedArtifact": "edgekit.api.artifact:ConvertedArtifact",
    "LoadedModel": "edgekit.api.runnable:LoadedModel",
    "Tensor": "edgekit.api.runnable:Tensor",
    "ProfileResult": "edgekit.measure.profile:ProfileResult",
    "BenchReport": "edgekit.measure.bench_report:BenchReport",
    "CheckReport": "edgekit.check.records:CheckReport",
    "InspectReport": "edgekit.inspect.records:InspectReport",
    "Manifest": "edgekit.core.artifact:Manifest",
    "Artifact": "edgekit.core.artifact:Artifact",
    # errors (each with .message, .hint and the CLI's .exit_code)
    "EdgekitError": "edgekit.core.errors:EdgekitError",
    "UsageError": "edgekit.core.errors:UsageError",
    "UnsupportedModel": "edgekit.core.errors:UnsupportedModel",
    "MissingDependency": "edgekit.core.errors:MissingDependency",
    "NotAvailable": "edgekit.core.errors:NotAvailable",
    "ConversionError": "edgekit.core.errors:ConversionError",
    "FidelityError": "edgekit.core.errors:FidelityError",
    "RuntimeFailure": "edgekit.core.errors:RuntimeFailure",
    "RuntimeCrash": "edgekit.core.errors:RuntimeCrash",
    "ArtifactNotFound": "edgekit.api.result:ArtifactNotFound",
}

__all__ = ["PUBLIC"]
