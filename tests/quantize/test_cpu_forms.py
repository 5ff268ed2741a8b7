"""The int8 form per deployment CPU class (edgekit.quantize.cpu_forms) and how a recipe's config takes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.quantize.cpu_forms import FORMS, cpu_class, form_for, read_cpuinfo
from edgekit.quantize.onnx.recipes import ONNX_RECIPES, W8A16, OnnxRecipeConfig

# class -> (activations, reduce_range, per_channel): what each row gives the ONNX quantizer
ROWS = {"x86-64-vnni": ("uint8", False, True), "x86-64": ("uint8", True, True),
        "arm64-dotprod": ("int8", False, True), "arm64": ("int8", False, True), "other": ("int8", False, True)}


@pytest.mark.parametrize("cpu", sorted(ROWS))
def test_each_class_gets_the_form_its_row_says(cpu: str) -> None:
    form = form_for(cpu)
    assert (form.activations, form.reduce_range, form.per_channel) == ROWS[cpu]
    assert "onnxruntime" in form.reason and form.tflite and form.openvino  # each row says why, and what others assume
    config = OnnxRecipeConfig().made_for(form)
    assert (config.activations, config.reduce_range, config.per_channel, config.cpu) == (*ROWS[cpu], cpu)
    assert config.to_dict()["cpu"] == cpu  # the int8 record says which CPU its form is for


def test_the_table_has_one_row_per_class_and_7_bit_weights_only_on_x86_without_vnni() -> None:
    assert set(FORMS) == set(ROWS)
    assert [c for c, f in FORMS.items() if f.reduce_range] == ["x86-64"]


@pytest.mark.parametrize(("machine", "features", "cpu"), [
    ("x86_64", ("avx2", "avx512f", "avx512_vnni"), "x86-64-vnni"),
    ("x86_64", ("avx2", "avx_vnni"), "x86-64-vnni"),  # Alder Lake's VEX-coded VNNI
    ("x86_64", ("avx2", "avx512f"), "x86-64"),
    ("aarch64", ("fp", "asimd", "atomics", "asimddp"), "arm64-dotprod"),
    ("aarch64", ("fp", "asimd", "crc32"), "arm64"),
    ("riscv64", ("rv64imafdc",), "other"),
])
def test_a_cpu_is_classed_by_its_architecture_and_features(machine: str, features: tuple[str, ...],
                                                          cpu: str) -> None:
    assert cpu_class(machine, features) == cpu


def test_cpuinfo_gives_the_architecture_and_features() -> None:
    x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx2 avx512_vnni\n\nprocessor\t: 1\n"
    assert read_cpuinfo(x86) == ("x86_64", ("fpu", "sse2", "avx2", "avx512_vnni"))
    arm = "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd asimddp\nCPU part\t: 0xd0b\n"
    assert read_cpuinfo(arm) == ("aarch64", ("fp", "asimd", "asimddp"))
    assert read_cpuinfo("") == ("", ())


def test_recipes_that_are_their_own_form_keep_it() -> None:
    """uint8 (U8U8, saturating nowhere) and NNCF keep their types; w8a16 keeps int16 activations and 8-bit weights;
    each records the CPU it was made for. Applying a form twice changes nothing."""
    x86 = form_for("x86-64")
    u8u8 = ONNX_RECIPES["uint8"].default.made_for(x86)
    assert (u8u8.unsigned, u8u8.reduce_range, u8u8.cpu) == (True, False, "x86-64")
    nncf = ONNX_RECIPES["nncf"].default.made_for(x86)
    assert (nncf.tool, nncf.reduce_range, nncf.cpu) == ("nncf", False, "x86-64")
    w8a16 = W8A16.made_for(x86)
    assert (w8a16.activations, w8a16.reduce_range, w8a16.cpu) == ("int16", False, "x86-64")
    plain = OnnxRecipeConfig(calibrate="mse", float_nodes=("fc",)).made_for(form_for("arm64"))
    assert plain.calibrate == "mse" and plain.float_nodes == ("fc",) and plain.made_for(form_for("arm64")) is plain


def test_a_recipe_builds_in_the_form_its_data_names(tmp_path: Path) -> None:
    """OnnxRecipe.build takes the form from QuantData (the step sets it from --for): the record is the config it
    was built with."""
    import numpy as np

    from edgekit.quantize.onnx.recipes import QuantData

    recipe = ONNX_RECIPES["plain"]()
    data = QuantData("x", np.zeros((1, 1), np.float32), 1, tmp_path, form=form_for("arm64-dotprod"))
    recipe.formed(data)
    assert (recipe.config.activations, recipe.config.reduce_range, recipe.config.cpu) == ("int8", False,
                                                                                        "arm64-dotprod")
