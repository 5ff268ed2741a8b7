"""Vendor telemetry off: no library edgekit drives reports usage from an edgekit process.

What sends, as read in openvino-telemetry 2025.2, openvino 2026.4 and nncf 3.4:
- OpenVINO's model converter (`openvino.convert_model`, ovc) and NNCF (on `import nncf`, and per
  `nncf.quantize`) report through the openvino-telemetry package (`openvino_telemetry.Telemetry`, a
  Google Analytics 4 backend). Both create it with `enable_opt_in_dialog=False`, which counts a missing
  consent file (~/intel/openvino_telemetry) as consent: a fresh machine sends, and a client-id file
  (~/intel/openvino_ga_cid) is written.
- The runtime itself (`openvino.Core`: read_model, compile_model, infer) sends nothing.

The vendors' opt-outs are all wider than one process: `opt_in_out --opt_out` writes "0" into that
consent file (a per-user setting edgekit must not change behind the user's back); CI=true declines in
both (they pass `disable_in_ci=True`) but tells every other library it runs in CI; NNCF_CI / NNCF_DEV
silence NNCF only. So edgekit declines for its own process, before it imports either library: the
consent check every `Telemetry` object makes (`OptInChecker.check`) answers "declined", and a
`Telemetry` made before that (NNCF imported first by the user) has its consent withdrawn. With consent
declined, openvino-telemetry sends no event and writes no client id. Without the package installed,
openvino and nncf use their own no-op stubs.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from edgekit.core._deps import require

_MARK = "_edgekit_declined"


def decline_openvino_telemetry() -> bool:
    """Make openvino-telemetry decline consent in this process; False where the package is not installed."""
    try:
        checker = importlib.import_module("openvino_telemetry.utils.opt_in_checker")
        main = importlib.import_module("openvino_telemetry.main")
    except ImportError:
        return False
    cls = checker.OptInChecker
    if not getattr(cls.check, _MARK, False):
        declined = checker.ConsentCheckResult.DECLINED

        def check(self: Any, enable_opt_in_dialog: bool, disable_in_ci: bool = False) -> Any:
            return declined

        setattr(check, _MARK, True)
        cls.check = check
    made = getattr(main.Telemetry, "_SingletonMetaClass__single_instance", None)  # one made before this call
    if made is not None:
        made.consent = False
    return True


def require_quiet(module: str, extra: str | None = None, purpose: str | None = None) -> ModuleType:
    """`edgekit.core._deps.require` for a library that may send telemetry: telemetry declined first."""
    decline_openvino_telemetry()
    return require(module, extra=extra, purpose=purpose)


__all__ = ["decline_openvino_telemetry", "require_quiet"]
