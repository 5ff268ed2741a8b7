"""What `edgekit.convert()` returns: the run's artifacts, its manifest and its Edge TPU state, as one object.

A `Conversion` is a sequence of `ConvertedArtifact` (iterating it gives the artifacts, as the list the API
returned before), looked up by target and precision (`result["tflite", "int8"]`), by file name, or by
position. `print(result)` shows `edgekit convert`'s table and the lines under it; Jupyter shows the same
table as HTML (`_repr_html_`). `bench()` and `check()` run `edgekit bench` / `edgekit check` on the run's
folder, which is what they read: files, never live objects. `edgekit.open_run(folder)` gives the same
object for a run converted earlier, from its manifest.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from edgekit.api.artifact import ConvertedArtifact
from edgekit.core.errors import UsageError

if TYPE_CHECKING:
    from rich.table import Table

    from edgekit.check.records import CheckReport
    from edgekit.conversion.execute import ConvertResult
    from edgekit.core.artifact import Manifest, SourceInfo
    from edgekit.edgetpu.records import EdgeTpuReport
    from edgekit.measure.bench_report import BenchReport


class ArtifactNotFound(UsageError, KeyError):
    """No artifact of the run matches a look-up (a UsageError, and a KeyError as a mapping's miss is)."""


class Conversion:
    """The result of `edgekit.convert()`: artifacts, manifest, Edge TPU state; a table in print and Jupyter.

    A sequence of ConvertedArtifact: iterate it, index it by position, or look an artifact up by target and
    precision (`result["tflite", "int8"]`, `result["tflite", "int8-uint8io"]`), by target alone where it made
    one (`result["onnx"]`), or by file name; a miss is ArtifactNotFound naming what the run made.
    `print(result)` shows `edgekit convert`'s table; Jupyter shows it as HTML. Attributes: `artifacts`,
    `manifest` (the Manifest record), `manifest_path`, `out_dir`, `source`, `warnings`, `failed`,
    `not_compiled` and `how_to_finish` (an Edge TPU model written but not compiled here, and the command that
    finishes it elsewhere), `edgetpu` (the pre-flight and compiler report).
    """

    def __init__(self, manifest: Manifest, manifest_path: str | Path, *, not_compiled: bool = False,
                 how_to_finish: str | None = None, warnings: list[str] | None = None) -> None:
        self.manifest = manifest
        self.manifest_path = Path(manifest_path)
        self.not_compiled = not_compiled  # an Edge TPU model was written and pre-flighted, but not compiled here
        self.how_to_finish = how_to_finish  # where not compiled: the command that finishes it elsewhere
        self.warnings = list(warnings if warnings is not None else manifest.warnings)
        self.artifacts = [ConvertedArtifact(a, manifest, self.manifest_path) for a in manifest.artifacts]

    @classmethod
    def of(cls, result: ConvertResult) -> Conversion:
        """From the pipeline's ConvertResult."""
        return cls(result.manifest, result.manifest_path, not_compiled=result.not_compiled,
                   how_to_finish=result.how_to_finish, warnings=result.warnings)

    @classmethod
    def open(cls, folder: str | Path) -> Conversion:
        """The run in FOLDER (an output folder of `edgekit convert`, or its manifest.json), read from its files."""
        from edgekit.core.artifact import Manifest

        p = Path(folder)
        path = p / "manifest.json" if p.is_dir() else p
        if not path.is_file():
            raise UsageError(f"No manifest.json in {p}.", hint="Pass the output folder of a conversion (its --out).")
        manifest = Manifest.read(path)
        report = next((r for r in (_edgetpu(a) for a in manifest.artifacts) if r is not None), None)
        unfinished = report is not None and not report.compiled and bool(report.how_to_finish)
        return cls(manifest, path, not_compiled=unfinished, how_to_finish=report.how_to_finish if report else None)

    # ------------------------------------------------------------------ what it holds
    @property
    def out_dir(self) -> Path:
        """The run's output folder."""
        return self.manifest_path.parent

    @property
    def source(self) -> SourceInfo:
        return self.manifest.source

    @property
    def failed(self) -> list[ConvertedArtifact]:
        """The artifacts that could not be made or validated (each with its `failure`)."""
        return [a for a in self.artifacts if not a.record.ok]

    @property
    def edgetpu(self) -> EdgeTpuReport | None:
        """The Edge TPU pre-flight and compiler report of the run (None: no Edge TPU target)."""
        return next((r for r in (_edgetpu(a.record) for a in self.artifacts) if r is not None), None)

    def __iter__(self) -> Iterator[ConvertedArtifact]:
        return iter(self.artifacts)

    def __len__(self) -> int:
        return len(self.artifacts)

    @overload
    def __getitem__(self, key: int) -> ConvertedArtifact: ...
    @overload
    def __getitem__(self, key: str | tuple[str, str]) -> ConvertedArtifact: ...

    def __getitem__(self, key: int | str | tuple[str, str]) -> ConvertedArtifact:
        """By position, by file name ("model.int8.tflite"), by target alone where it made one artifact
        ("onnx"), or by (target, precision) where the precision may name an I/O variant ("int8-uint8io")."""
        if isinstance(key, int):
            return self.artifacts[key]
        if isinstance(key, str):
            named = [a for a in self.artifacts if a.record.path == key]
            return named[0] if named else self._find(key, None)
        if isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key):
            return self._find(*key)
        raise ArtifactNotFound(f"Cannot look an artifact up by {key!r}.",
                               hint='Use result["tflite", "int8"], a file name, or a position.')

    def _find(self, fmt: str, variant: str | None) -> ConvertedArtifact:
        of_format = [a for a in self.artifacts if a.record.format == fmt]
        if variant is None:
            found = of_format
        else:
            found = [a for a in of_format if a.record.variant == variant] or \
                    [a for a in of_format if a.record.precision == variant]
        if len(found) == 1:
            return found[0]
        have = ", ".join(f'("{a.record.format}", "{a.record.variant}")' for a in self.artifacts) or "none"
        wanted = f'("{fmt}", "{variant}")' if variant else f'"{fmt}"'
        if found:
            raise ArtifactNotFound(f"{len(found)} artifacts match {wanted}: name one of {have}.")
        raise ArtifactNotFound(f"The run made no artifact {wanted}.", hint=f"It made: {have}.")

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (int, str, tuple)):
            return False  # a key __getitem__ refuses (ArtifactNotFound)
        try:
            self[key]
        except (ArtifactNotFound, IndexError):
            return False
        return True

    # ------------------------------------------------------------------ showing it
    def table(self) -> Table:
        """`edgekit convert`'s table (rich) of this run."""
        from edgekit.report import convert_table

        return convert_table(self.manifest)

    def _footer(self) -> list[str]:
        from edgekit.report.convert import run_line

        lines = [f"manifest: {self.manifest_path}"]
        line = run_line(self.manifest)
        if line:
            lines.append(line)
        lines += [f"warning: {w}" for w in self.warnings]
        if self.failed:
            lines.append(f"{len(self.failed)} of {len(self.artifacts)} artifacts failed; the others were validated "
                         "and published (each failure is in manifest.json).")
        if self.not_compiled:
            lines.append("Edge TPU model written and pre-flighted, but not compiled: no edgetpu_compiler here.")
            if self.how_to_finish:
                lines.append(self.how_to_finish)
        return lines

    def __str__(self) -> str:
        from edgekit.api.html import table_text

        return table_text(self.table(), self._footer())

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from edgekit.api.html import table_html

        return table_html(self.table(), self._footer())

    def to_pandas(self) -> Any:
        """One row per artifact (file, format, precision, status, size, fidelity figures, seconds): a DataFrame."""
        from edgekit.core._deps import require

        pandas = require("pandas", purpose="make a DataFrame")
        rows = []
        for a in self.manifest.artifacts:
            f = a.fidelity
            rows.append({"path": a.path, "format": a.format, "precision": a.precision, "variant": a.variant,
                         "status": a.status, "size_bytes": a.size_bytes, "passed": f.passed if f else None,
                         "top1_agreement": f.top1_agreement if f else None, "accuracy": f.accuracy if f else None,
                         "cosine": f.cosine if f else None, "seconds": a.seconds})
        return pandas.DataFrame(rows)

    # ------------------------------------------------------------------ what it can go on to
    def bench(self, **settings: Any) -> BenchReport:
        """`edgekit bench` on this run: every artifact on every runtime and device here (see `edgekit.bench`)."""
        from edgekit.api.measure import bench

        return bench(self.manifest_path, **settings)

    def check(self, baseline: str | Path | Conversion | None = None, budget: str | Path | None = None
              ) -> CheckReport:
        """`edgekit check` on this run against BASELINE and BUDGET (see `edgekit.check`)."""
        from edgekit.check import check

        return check(self, baseline=baseline, budget=budget)


def open_run(folder: str | Path) -> Conversion:
    """The conversion run in FOLDER (its output folder or manifest.json), as `edgekit.convert()` returned it."""
    return Conversion.open(folder)


def _edgetpu(record: Any) -> EdgeTpuReport | None:
    from edgekit.edgetpu.records import EdgeTpuReport

    return EdgeTpuReport.read(record.extra.get("edgetpu")) if isinstance(record.extra, dict) else None


__all__ = ["ArtifactNotFound", "Conversion", "open_run"]
