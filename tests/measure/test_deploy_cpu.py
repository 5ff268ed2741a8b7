"""`convert --for`: a name resolved to a CPU class and its int8 form; `host` read from /proc/cpuinfo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgekit.core.errors import UsageError
from edgekit.measure.deploy_cpu import choices, deploy_cpu, host_cpu

X86 = ("processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
       "flags\t\t: fpu sse2 ssse3 avx avx2 fma avx512f avx512bw {vnni}\n\n")
ARM = ("processor\t: {i}\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid{dot}\nCPU implementer\t: 0x41\n"
       "CPU part\t: 0xd0b\n\n")


def _root(tmp_path: Path, name: str, text: str) -> Path:
    root = tmp_path / name
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "cpuinfo").write_text(text)
    return root


@pytest.mark.parametrize(("name", "text", "cpu", "deciding", "activations", "reduce_range"), [
    ("vnni", "".join(X86.format(i=i, vnni="avx512_vnni") for i in range(2)), "x86-64-vnni", ["avx512_vnni"],
     "uint8", False),
    ("avx2", "".join(X86.format(i=i, vnni="") for i in range(2)), "x86-64", [], "uint8", True),
    ("a76", "".join(ARM.format(i=i, dot=" atomics asimddp") for i in range(4)), "arm64-dotprod", ["asimddp"],
     "int8", False),
    ("a72", "".join(ARM.format(i=i, dot="") for i in range(4)), "arm64", [], "int8", False),
])
def test_host_is_read_from_proc_cpuinfo(tmp_path: Path, name: str, text: str, cpu: str, deciding: list[str],
                                        activations: str, reduce_range: bool) -> None:
    got = host_cpu(_root(tmp_path, name, text))
    assert got.name == "host" and got.form.cpu == cpu and list(got.deciding) == deciding
    assert (got.form.activations, got.form.reduce_range) == (activations, reduce_range)
    record = got.to_dict()  # what the manifest keeps
    assert record["for"] == "host" and record["cpu"] == cpu and record["onnx"]["reduce_range"] is reduce_range
    assert record["tflite"] and record["openvino"]
    if name == "vnni":
        assert got.device == "Intel(R) Xeon(R) Platinum 8480+"
    assert deploy_cpu("host", _root(tmp_path, name + "-again", text)).form == got.form


def test_a_host_without_proc_falls_back_to_its_architecture(tmp_path: Path) -> None:
    got = host_cpu(tmp_path)  # no proc/cpuinfo here: platform.machine(), no features
    assert got.form.cpu in ("x86-64", "arm64", "other") and got.deciding == ()


@pytest.mark.parametrize(("name", "device", "cpu"), [
    ("pi5", "raspberry-pi-5", "arm64-dotprod"), ("pi4", "raspberry-pi-4", "arm64"), ("pi3", "raspberry-pi-3", "arm64"),
    ("raspberry-pi-5", "raspberry-pi-5", "arm64-dotprod"), ("cpu-x86", "cpu-x86", "x86-64"),
    ("cpu-arm64", "cpu-arm64", "arm64"), ("x86-64-vnni", "x86-64-vnni", "x86-64-vnni"),
])
def test_device_profiles_and_classes_resolve(name: str, device: str, cpu: str) -> None:
    got = deploy_cpu(name)
    assert (got.device, got.form.cpu) == (device, cpu)


def test_an_unknown_cpu_is_refused_listing_the_choices() -> None:
    with pytest.raises(UsageError) as exc:
        deploy_cpu("pi6")
    assert "pi6" in exc.value.message and "did you mean 'pi5'" in (exc.value.hint or "")
    for name in ("host", "x86-64-vnni", "x86-64", "arm64", "pi4", "raspberry-pi-5"):
        assert name in (exc.value.hint or "") and name in choices()
    with pytest.raises(UsageError) as exc:
        deploy_cpu("coral-usb")  # a device, but not a CPU
    assert "not a CPU" in exc.value.message


def test_the_options_check_it_and_record_it() -> None:
    from edgekit.conversion.options import ConvertOptions

    opts = ConvertOptions(deploy_cpu="pi5")
    opts.check()
    record = opts.to_dict()
    assert record["deploy_cpu"] == "pi5" and record["deploy_cpu_form"]["cpu"] == "arm64-dotprod"
    assert record["deploy_cpu_form"]["onnx"]["activations"] == "int8"
    assert ConvertOptions().deploy_cpu == "host"
    with pytest.raises(UsageError):
        ConvertOptions(deploy_cpu="pentium").check()


@pytest.mark.slow  # a real conversion of the bundled CNN (seconds)
def test_converting_for_pi5_writes_signed_qdq(bundled_pt2: Path, tmp_path: Path) -> None:
    """--for pi5: the ONNX int8's activation QDQ pairs are int8 (S8S8), its weights 8-bit; the manifest says why."""
    import onnx

    from edgekit.conversion.pipeline import convert

    result = convert(bundled_pt2, "onnx", "int8", calib="mnist", calib_size=64, val_size=64, out=tmp_path / "pi5",
                     deploy_cpu="pi5")
    manifest = json.loads(result.manifest_path.read_text())
    assert manifest["options"]["deploy_cpu"] == "pi5" and manifest["options"]["deploy_cpu_form"]["cpu"] == \
        "arm64-dotprod"
    art = manifest["artifacts"][0]
    config = art["extra"]["int8_recipe"]["config"]
    assert (config["cpu"], config["activations"], config["reduce_range"]) == ("arm64-dotprod", "int8", False)
    assert any("made for pi5" in n for n in art["extra"]["int8_recipe"]["notes"])
    model = onnx.load(str(tmp_path / "pi5" / art["path"]))
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    zero_points = [inits[n.input[2]] for n in model.graph.node if n.op_type == "QuantizeLinear"]
    assert zero_points and all(z.dtype.name == "int8" for z in zero_points)  # activations: signed
    weights = [inits[n.input[0]] for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits
               and inits[n.input[0]].ndim == 4]
    assert weights and all(w.dtype.name == "int8" for w in weights)
    assert max(int(abs(w.astype(int)).max()) for w in weights) > 64  # 8-bit weights, not reduce_range's 7
