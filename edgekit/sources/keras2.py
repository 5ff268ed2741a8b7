"""Keras 2 model files (tf.keras of TensorFlow <= 2.15, and `tf_keras` since): told apart, and read with tf_keras.

Most `.h5` files on disk, and `.keras` archives saved with tf_keras, were written by Keras 2. Keras 3
cannot read them faithfully: it rejects configs Keras 2 wrote ("Error when deserializing class
'DepthwiseConv2D' using config={... 'groups': 1 ...}"), and a tf_keras `.keras` names classes from
`tf_keras.src.engine.functional` that Keras 3 cannot locate. The file says who wrote it:
- an `.h5` has a `keras_version` attribute ("2.4.0", "2.2.4-tf", "3.15.1" ...);
- a `.keras` archive has `metadata.json` with `keras_version`; without one, a config whose classes
  come from `tf_keras.*` or Keras 2's `keras.engine.*` modules is Keras 2 too.
A Keras 2 file is loaded with `tf_keras` (the Keras that wrote it), after the same config scan as a
Keras 3 file (edgekit.sources.keras: no Lambda layers or custom code without --trust-model), with
tf_keras's own safe mode on (its legacy `.h5` loader only honours it inside a SafeModeScope) and
compile=False.
"""

from __future__ import annotations

import contextlib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgekit.core import jsonsafe
from edgekit.core._deps import require
from edgekit.core.border import all_text, vendor_errors, vendor_message
from edgekit.core.errors import UnsupportedModel

_KERAS2_MODULES = ("tf_keras.", "keras.engine.", "keras.src.engine.")


def written_by(path: Path, kind: str) -> str | None:
    """The Keras version the file records (`keras_version`), or None where it records none."""
    raw: Any = None
    with contextlib.suppress(OSError, KeyError, ValueError, AttributeError, zipfile.BadZipFile, RuntimeError):
        if kind == "keras":
            with zipfile.ZipFile(path) as zf:
                raw = jsonsafe.loads(zf.read("metadata.json")).get("keras_version")
        else:
            h5py = require("h5py", extra="convert", purpose="read .h5 Keras models")
            with h5py.File(path, "r") as f:
                raw = f.attrs.get("keras_version")
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return (str(raw).strip() or None) if raw is not None else None


def is_keras2(version: str | None, config: dict[str, Any], kind: str) -> bool:
    """True when the file was written by Keras 2: its recorded version, else its config's modules."""
    if version:
        major = version.split(".", 1)[0]
        return major.isdigit() and int(major) < 3
    if kind == "h5":  # Keras 3 always records its version in an .h5; one without is older
        return True
    module = config.get("module")
    return isinstance(module, str) and module.startswith(_KERAS2_MODULES)


def describe(version: str | None, keras2: bool) -> str:
    """"Keras 2.4.0" / "Keras 3.15.1" / "Keras 2 (no version recorded)" for messages."""
    return f"Keras {version}" if version else f"Keras {'2' if keras2 else '3'} (no version recorded)"


@contextlib.contextmanager
def _safe_mode(tf_keras: Any, safe: bool) -> Iterator[None]:
    """tf_keras's legacy .h5 loader reads Lambda bytecode unless a SafeModeScope says otherwise."""
    try:
        from tf_keras.src.saving.serialization_lib import SafeModeScope
    except ImportError:  # a tf_keras without it: edgekit's own config scan already ran
        yield
        return
    with SafeModeScope(safe_mode=safe):
        yield


def load(path: Path, kind: str, trust_model: bool, version: str | None) -> Any:
    """The tf_keras model in PATH (a Keras 2 .h5 or .keras), or UnsupportedModel saying who wrote it and what to do."""
    who = describe(version, True)
    tf_keras = require("tf_keras", extra="convert", purpose=f"read {path.name}, written by {who}")
    what = f"{path} (written by {who}) could not be read with tf_keras"
    try:
        with vendor_errors("keras", error=UnsupportedModel, what=what, hint=_READ_HINT,
                           describe=lambda exc: f"{type(exc).__name__}: {vendor_message(exc, 300)}"), \
                _safe_mode(tf_keras, not trust_model):
            return tf_keras.models.load_model(str(path), compile=False, safe_mode=not trust_model)
    except UnsupportedModel as mapped:
        text = all_text(mapped.__cause__ or mapped)
        if "safe_mode" in text or "unsafe" in text.lower():
            raise UnsupportedModel(f"{path} (written by {who}) needs code execution to load, and tf_keras refused "
                                   f"it in safe mode: {vendor_message(mapped.__cause__ or mapped, 300)}",
                                   hint=TRUST_HINT) from mapped.__cause__
        if "Unknown layer" in text or "Could not locate" in text or "Unknown object" in text:
            raise UnsupportedModel(
                f"{path} (written by {who}) uses a custom class that tf_keras does not know here: "
                f"{vendor_message(mapped.__cause__ or mapped, 300)}",
                hint="Build the model with --model package.module:factory and pass this file for the weights, or "
                "make the module that registers the class importable and pass --trust-model.",
            ) from mapped.__cause__
        raise


TRUST_HINT = (
    "If you trust this file and its code, pass --trust-model. Otherwise rebuild the network in your own "
    "code and pass --model package.module:factory with this file for the weights."
)
_READ_HINT = (
    "Where the model still loads in the Keras that wrote it, save it as a SavedModel there "
    "(model.save('folder') in tf.keras / tf_keras) and convert that folder; or rebuild the network in code and "
    "pass --model package.module:factory with this file for the weights."
)


def is_tf_keras_model(model: Any) -> bool:
    """True for a tf_keras.Model (judged by its classes, without importing tf_keras)."""
    return any(c.__module__.split(".", 1)[0] == "tf_keras" for c in type(model).__mro__)


__all__ = ["TRUST_HINT", "describe", "is_keras2", "is_tf_keras_model", "load", "written_by"]
