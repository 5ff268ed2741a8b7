"""One artifact of a conversion, as the Python API hands it out: its record, and what can be done with it.

`result["tflite", "int8"]` is a `ConvertedArtifact`. It reads like the manifest's `Artifact` record (every
field of the record is an attribute: `path`, `format`, `precision`, `fidelity`, `inputs`, ...), and adds
`file` (where it is), `load()` (run it on numpy arrays), `inspect()` and `profile()`. An artifact that
could not be made says so (`ok`, `failure`) and refuses to load, with the failure's message.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgekit.core.errors import UsageError

if TYPE_CHECKING:
    from edgekit.api.runnable import Layout, LoadedModel
    from edgekit.core.artifact import Artifact, Manifest
    from edgekit.inspect.records import InspectReport
    from edgekit.measure.profile import ProfileResult


class ConvertedArtifact:
    """An artifact of a conversion run: the manifest's record, its file, and load / inspect / profile.

    Every field of the record reads as an attribute (`path`, the file's name in the run's folder, `format`,
    `precision`, `variant`, `fidelity`, `inputs`, `outputs`, `size_bytes`, `sha256`, `ok`, `failure`, `extra`);
    `record` is the Artifact itself, `file` the path to the file. An artifact that was not made refuses
    `load`, `inspect` and `profile` with its failure's message.
    """

    def __init__(self, record: Artifact, manifest: Manifest, manifest_path: Path) -> None:
        self.record = record
        self.manifest = manifest
        self.manifest_path = Path(manifest_path)

    def __getattr__(self, name: str) -> Any:  # the record's fields: path, format, precision, fidelity, extra ...
        if name == "record":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.record, name)

    @property
    def file(self) -> Path:
        """The artifact's file (or SavedModel folder), resolved against the manifest's folder."""
        return self.manifest.resolve(self.record, self.manifest_path)

    def _usable(self) -> Path:
        if not self.record.ok:
            f = self.record.failure
            raise UsageError(f"{self.record.path} was not made: {f.message if f else 'it failed'}.",
                             hint=(f.hint if f and f.hint else None) or "See result.warnings and the manifest.")
        path = self.file
        if not path.exists():
            raise UsageError(f"{path} is missing: the conversion's output folder was changed since.",
                             hint="Convert again, or open the folder that holds it with edgekit.open_run().")
        return path

    def load(self, device: str = "cpu", *, runtime: str | None = None, threads: int | None = None,
             layout: Layout = "source", **options: Any) -> LoadedModel:
        """Load the artifact on DEVICE and return a callable: `model(x)` -> {output name: array}.

        Inputs by the source model's names (or positionally), float for quantized inputs; a 4-D input in the
        source's layout (`layout="artifact"`: the artifact's own); OPTIONS are the runtime's load options
        (`edgekit profile --option`). See edgekit.api.runnable.
        """
        from edgekit.api.runnable import LoadedModel

        return LoadedModel(self._usable(), device=device, runtime=runtime, threads=threads, artifact=self.record,
                           source=self.manifest.source, layout=layout, options=options)

    def inspect(self, min_runtime: int | None = None) -> InspectReport:
        """Ops, shapes, MACs, parameters and (for .tflite) the Edge TPU pre-flight: `edgekit inspect`'s report."""
        from edgekit.inspect import inspect_model

        return inspect_model(self._usable(), min_runtime=min_runtime)

    def profile(self, device: str = "auto", **settings: Any) -> ProfileResult:
        """Measure the artifact here: `edgekit profile`'s ProfileResult (keywords as `edgekit.profile`)."""
        from edgekit.api.measure import profile

        return profile(self._usable(), device=device, **settings)

    def __repr__(self) -> str:
        from edgekit.report.fidelity import agreement
        from edgekit.report.text import human_bytes

        r = self.record
        if not r.ok:
            where = r.failure.step if r.failure else None
            return f"<ConvertedArtifact {r.path} ({r.format} {r.variant}): FAILED at {where or '?'}>"
        verdict = "not validated here" if r.fidelity is None else "pass" if r.fidelity.passed else "MISS"
        return (f"<ConvertedArtifact {r.path} ({r.format} {r.variant}), {human_bytes(r.size_bytes)}, agreement "
                f"{agreement(r.fidelity)}, fidelity {verdict}>")


__all__ = ["ConvertedArtifact"]
