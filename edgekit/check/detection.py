"""A detector's figures as `edgekit check` compares them: box recall, box precision and mAP50, per artifact.

A detector is judged by the boxes it keeps (edgekit.fidelity.detection), so its CI budgets are too:
`min_detection_recall`, `min_detection_precision` and `max_map_drop` (edgekit.check.budgets). The
manifest holds those figures in the artifact's fidelity record (its worst output's) and in each
output's own record; an artifact is held to the worst of its detector outputs, so a model with two
heads cannot hide a bad one behind a good one. A manifest without them (a classifier, or a run from
before edgekit judged detectors by their boxes) yields None: the budgets do not apply to it.

The manifest side comes from the one typed reader (Manifest.read: a figure of the wrong type is no figure);
a baseline's `detection` value is read here, the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from edgekit.core.artifact import Fidelity
from edgekit.core.filedoc import as_float, as_int, as_str
from edgekit.core.records import Record


@dataclass
class DetectionFacts(Record):
    """The worst detector output's figures: recall and precision of the source's boxes, mAP50 with labelled boxes.

    RECALL / PRECISION: the lowest over the artifact's detector outputs, OUTPUT the one with the lowest recall.
    MAP50 / REFERENCE_MAP50: the artifact's and the source's, from the output with the lowest mAP50 (None
    without labelled boxes). DETECTIONS: the fewest source boxes an output was judged on.
    """

    recall: float | None = None
    precision: float | None = None
    map50: float | None = None
    reference_map50: float | None = None
    detections: int | None = None
    output: str | None = None

    @classmethod
    def of_fidelity(cls, fid: Fidelity | None) -> DetectionFacts | None:
        """From a manifest artifact's fidelity record (read by Manifest.read, its figures typed); None where no
        record in it holds a detector's figures."""
        if fid is None:
            return None
        records = [fid, *(o.fidelity for o in fid.outputs if o.fidelity is not None)]
        found = [r for r in records if as_float(r.detection_recall) is not None
                 or as_float(r.detection_precision) is not None or as_float(r.map50) is not None]
        if not found:
            return None
        recalls = [r for r in found if as_float(r.detection_recall) is not None]
        worst = min(recalls, key=lambda r: as_float(r.detection_recall) or 0.0) if recalls else found[0]
        maps = [r for r in found if as_float(r.map50) is not None]
        low = min(maps, key=lambda r: as_float(r.map50) or 0.0) if maps else None
        return cls(recall=_lowest(found, "detection_recall"), precision=_lowest(found, "detection_precision"),
                   map50=as_float(low.map50) if low else None,
                   reference_map50=as_float(low.reference_map50) if low else None,
                   detections=min((r.detections for r in found if r.detections is not None), default=None),
                   output=worst.output or None)

    @classmethod
    def read(cls, d: Any) -> DetectionFacts | None:
        """From a baseline's `detection` value (written by to_dict); None for null or anything but a table."""
        if not isinstance(d, dict):
            return None
        return cls(recall=as_float(d.get("recall")), precision=as_float(d.get("precision")),
                   map50=as_float(d.get("map50")), reference_map50=as_float(d.get("reference_map50")),
                   detections=as_int(d.get("detections")), output=as_str(d.get("output")) or None)


def _lowest(records: list[Fidelity], key: str) -> float | None:
    values = [v for v in (as_float(getattr(r, key)) for r in records) if v is not None]
    return min(values) if values else None


__all__ = ["DetectionFacts"]
