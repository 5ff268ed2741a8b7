"""The vendor border: one formatter of vendor messages, and bugs kept apart from vendor failures."""

from __future__ import annotations

import sys
import types

import pytest

from edgekit.core import border
from edgekit.core.border import internal_error, vendor_cause, vendor_errors, vendor_message
from edgekit.core.errors import (
    EXIT_CONVERSION,
    EXIT_INTERNAL,
    ConversionError,
    InternalError,
    MissingDependency,
    UsageError,
)


# --- the formatter ---------------------------------------------------------------------------------
class _BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def _chained(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as exc:
        return exc


@pytest.mark.parametrize("exc, text", [
    (RuntimeError(""), "RuntimeError"),
    (ValueError("   \n\n  "), "ValueError"),
    (RuntimeError("\n\n  first line\nsecond line"), "first line"),
    (RuntimeError("=====\n  [ONNXRuntimeError] : 1 : FAIL : bad\n---"), "[ONNXRuntimeError] : 1 : FAIL : bad"),
    (Exception(None), "Exception"),
    (Exception(42), "42"),
    (KeyError("keras_tensor_3"), "'keras_tensor_3'"),
    (Exception(b"raw bytes"), "b'raw bytes'"),
    (_BadStr("from args"), "'from args'"),
    (RuntimeError("\x1b[1;31mError:\x1b[0m op \x1b[33mFoo\x1b[0m is not supported"), "Error: op Foo is not supported"),
    (_chained(RuntimeError(""), ValueError("the real reason\nmore")), "the real reason"),
    (_chained(SystemExit(1), RuntimeError("")), "1"),
    (_chained(RuntimeError(None), TypeError("")), "RuntimeError"),
])
def test_vendor_message(exc: BaseException, text: str) -> None:
    assert vendor_message(exc) == text


def test_vendor_message_caps_and_takes_the_last_line_on_request() -> None:
    long = vendor_message(RuntimeError("x" * 1000), limit=50)
    assert len(long) == 50 and long.endswith("...")
    assert vendor_message(RuntimeError("Traceback (most recent call last):\n  ...\nshape mismatch"), last=True) \
        == "shape mismatch"


def test_a_cycle_in_the_chain_ends() -> None:
    a, b = RuntimeError(""), RuntimeError("")
    a.__context__, b.__context__ = b, a
    assert vendor_message(a) == "RuntimeError"


# --- the border ------------------------------------------------------------------------------------
@pytest.fixture
def fake_vendor(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A third-party module (not edgekit) with a bug, a deliberate error type, and a callback user."""
    mod = types.ModuleType("ek_fake_vendor")
    src = (
        "class VendorFail(Exception):\n    pass\n"
        "def buggy(x):\n    return len(x)\n"
        "def fail():\n    raise VendorFail('')\n"
        "def call_back(fn):\n    return fn()\n"
        "def bail():\n    import sys\n    sys.exit(1)\n"
    )
    exec(compile(src, "ek_fake_vendor.py", "exec"), mod.__dict__)
    monkeypatch.setitem(sys.modules, "ek_fake_vendor", mod)
    return mod


def test_empty_vendor_message_gives_a_clean_conversion_error(fake_vendor: types.ModuleType) -> None:
    what = "ONNX int8 conversion failed"
    with pytest.raises(ConversionError) as info, vendor_errors("onnxruntime", step="onnx_quantize", what=what,
                                                               hint="h"):
        fake_vendor.fail()
    err = info.value
    assert err.message == "ONNX int8 conversion failed (step onnx_quantize): VendorFail"
    assert (err.step, err.hint, err.exit_code) == ("onnx_quantize", "h", EXIT_CONVERSION)
    assert isinstance(err.__cause__, fake_vendor.VendorFail)


def test_a_type_error_inside_the_vendor_is_the_vendor_failing(fake_vendor: types.ModuleType) -> None:
    with pytest.raises(ConversionError) as info, vendor_errors("onnxruntime", step="onnx_quantize"):
        fake_vendor.buggy(None)
    assert "onnxruntime failed with an internal error of that library (TypeError: object of type 'NoneType'" \
        in info.value.message
    assert info.value.message.startswith("onnxruntime failed (step onnx_quantize): ")


def test_a_type_error_inside_edgekit_is_a_bug_in_edgekit(fake_vendor: types.ModuleType) -> None:
    with pytest.raises(InternalError) as info, vendor_errors("onnxruntime", step="onnx_quantize"):
        fake_vendor.call_back(lambda: border._cap(None, 5))  # the vendor calls edgekit back; edgekit's bug
    err = info.value
    assert err.exit_code == EXIT_INTERNAL and err.step == "onnx_quantize"
    assert "TypeError" in err.message and "edgekit/core/border.py:" in err.message and "(_cap)" in err.message
    assert "bug in edgekit" in err.message and "EDGEKIT_DEBUG=1" in (err.hint or "")
    assert not isinstance(err, UsageError)


def test_an_edgekit_module_missing_a_name_is_a_bug_not_the_model() -> None:
    # seen mid-edit: "cannot import name 'margin_z' from 'edgekit.quantize.search'" came out as a TFLite
    # conversion failure with the hint to replace an op without an int8 kernel
    with pytest.raises(InternalError) as info, vendor_errors("tensorflow", step="tflite_convert",
                                                             hint="replace the op"):
        exec("from edgekit.core.border import no_such_name", {"__name__": "edgekit.quantize._probe"})  # in edgekit
    assert "bug in edgekit" in info.value.message and info.value.hint != "replace the op"
    with pytest.raises(ConversionError), vendor_errors("tensorflow", step="tflite_convert"):
        exec("import edgekit_test_absent_vendor_module", {"__name__": "edgekit.quantize._probe"})


def test_edgekit_errors_and_interrupts_pass_untouched() -> None:
    mine = MissingDependency("m", hint="pip")
    with pytest.raises(MissingDependency) as info, vendor_errors("tensorflow"):
        raise mine
    assert info.value is mine
    with pytest.raises(KeyboardInterrupt), vendor_errors("tensorflow"):
        raise KeyboardInterrupt


def test_system_exit_is_a_failure_only_for_a_vendor_that_exits(fake_vendor: types.ModuleType) -> None:
    with pytest.raises(ConversionError, match=r"onnx2tf failed \(step onnx_to_savedmodel\): 1"), \
            vendor_errors("onnx2tf", step="onnx_to_savedmodel"):
        fake_vendor.bail()
    with pytest.raises(SystemExit), vendor_errors("tensorflow"):
        fake_vendor.bail()


def test_known_vendor_types_resolve_lazily_and_overrides_pick_the_class(fake_vendor: types.ModuleType,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert border._resolve(("ek_fake_vendor:VendorFail", "ek_not_imported_xyz:Err")) == (fake_vendor.VendorFail,)
    with pytest.raises(UsageError, match="cannot read"), \
            vendor_errors("torch", error=ConversionError, what="cannot read", errors={OSError: UsageError}):
        raise FileNotFoundError(2, "No such file")
    with pytest.raises(ConversionError), vendor_errors("torch", errors={"ek_fake_vendor:VendorFail": ConversionError},
                                                       error=UsageError):
        fake_vendor.fail()


def test_decorator_form_describe_and_op(fake_vendor: types.ModuleType) -> None:
    @vendor_errors("torch.onnx", step="torch_to_onnx", describe=lambda e: "the op aten.foo has no ONNX conversion",
                   op=lambda e: "aten.foo")
    def export() -> None:
        fake_vendor.fail()

    with pytest.raises(ConversionError) as info:
        export()
    assert info.value.op == "aten.foo" and info.value.message.endswith("aten.foo has no ONNX conversion")


def test_unknown_vendor_is_refused() -> None:
    with pytest.raises(KeyError, match="unknown vendor"):
        vendor_errors("tensorflw")


def test_internal_error_of_a_bare_exception() -> None:
    err = internal_error(RuntimeError(""))
    assert err.message.startswith("RuntimeError: RuntimeError. This is a bug in edgekit")


def test_cli_turns_an_unexpected_exception_into_internal_error(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from edgekit import cli

    def broken(*_a: object, **_k: object) -> None:
        return border._cap(None, 3)  # a TypeError raised in edgekit's code

    monkeypatch.setattr(cli, "app", broken)
    monkeypatch.delenv("EDGEKIT_DEBUG", raising=False)
    assert cli.main(["devices"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "internal error: TypeError" in err and "bug in edgekit" in err and "EDGEKIT_DEBUG=1" in err
    assert "Traceback" not in err
    monkeypatch.setenv("EDGEKIT_DEBUG", "1")
    assert cli.main(["devices"]) == EXIT_INTERNAL
    assert "Traceback" in capsys.readouterr().err


def test_cli_usage_errors_keep_their_behaviour(capsys: pytest.CaptureFixture[str]) -> None:
    from edgekit import cli

    assert cli.main(["convert", "--no-such-option"]) == 2
    assert "No such option" in capsys.readouterr().err


def test_a_quoted_tensor_is_cut_out_of_the_cause() -> None:
    """onnx2tf on MobileViT: TensorFlow quoted 144 values twice, and the 300-character cause showed only them."""
    import numpy as np

    values = np.ones(144, np.float32)
    exc = TypeError(f"Eager execution of tf.constant with unsupported shape. Tensor {values} (converted from "
                    f"{values}) has 144 elements, but got `shape` (100,) with 100 elements).")
    cause = vendor_cause(exc, 300)
    assert cause.endswith("has 144 elements, but got `shape` (100,) with 100 elements).")
    assert "Tensor [...] (converted from [...])" in cause
    assert vendor_cause(ValueError("shapes [1, 40, 40] and [3] differ"), 300) == "shapes [1, 40, 40] and [3] differ"
