"""Every way edgekit reaches OpenVINO or NNCF declines their telemetry first (edgekit.core.vendor_telemetry).

`import nncf` alone sends usage events and writes ~/intel/openvino_ga_cid on a machine without a consent file
(measured: six events from one nncf.quantize on a one-Conv ONNX model); tests/runtimes/test_openvino_runtime.py
shows the decline works. This test keeps every import of the two libraries behind it: a source read, no import.
"""

from __future__ import annotations

import re
from pathlib import Path

import edgekit

PACKAGE = Path(edgekit.__file__).parent
# a plain `require("nncf" ...)` / `require("openvino" ...)` of edgekit.core._deps, or an import statement
_PLAIN = re.compile(r"(?<![\w.])require\(\s*[\"'](?:nncf|openvino)[\"']"
                    r"|^\s*(?:import|from)\s+(?:nncf|openvino)\b", re.M)


def test_openvino_and_nncf_are_reached_only_with_telemetry_declined() -> None:
    plain = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        if "require_quiet as require" in text:  # the module's `require` is the quiet one
            continue
        plain += [f"{path.relative_to(PACKAGE)}: {m.group(0).strip()}" for m in _PLAIN.finditer(text)]
    assert plain == [], "use edgekit.core.vendor_telemetry.require_quiet: " + "; ".join(plain)
