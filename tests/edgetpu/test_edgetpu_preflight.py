"""Pre-flight on real int8 models built with TensorFlow, and against real compiler logs of the same CNN."""

from __future__ import annotations

import pytest

from edgekit.edgetpu import compare, parse_log, preflight


def ops_of(pf):
    return [e.op for e in pf.ops]


def test_integer_io_cnn_maps_completely(tf_models):
    pf = preflight(tf_models["int8io"])
    assert pf.predicted is True and pf.compiled is False
    assert pf.ops_total == pf.ops_on_tpu == 8
    assert pf.ops_on_tpu_fraction == 1.0 and pf.macs_on_tpu_fraction == 1.0
    assert pf.first_unsupported is None and pf.problems == []
    assert pf.macs_total > 0


def test_uint8_io_requantize_ops_are_mapped(tf_models):
    pf = preflight(tf_models["uint8io"])
    assert ops_of(pf)[0] == ops_of(pf)[-1] == "QUANTIZE"
    assert pf.ops_on_tpu == pf.ops_total == 10
    # QUANTIZE is in Coral's table from runtime 13: targeting 12 unmaps it, and it is the first op
    pf12 = preflight(tf_models["uint8io"], min_runtime=12)
    assert pf12.first_unsupported.index == 0
    assert pf12.first_unsupported.op == "QUANTIZE"
    assert any(p.kind == "runtime_version" for p in pf12.problems)


def test_float_io_leaves_quantize_and_dequantize_on_cpu_but_maps_the_rest(tf_models):
    pf = preflight(tf_models["float_io"])
    assert ops_of(pf)[0] == "QUANTIZE" and ops_of(pf)[-1] == "DEQUANTIZE"
    assert [e.mapped for e in pf.ops] == [False] + [True] * 8 + [False]
    assert pf.ops[0].code == pf.ops[-1].code == "float_io"
    assert pf.first_unsupported is None  # a float-input QUANTIZE does not stop the mapping
    assert pf.macs_on_tpu_fraction == 1.0
    (problem,) = pf.problems
    assert problem.kind == "float_io" and problem.ops == [0, 9]
    assert "--io-dtype uint8" in problem.suggestion


def test_dynamic_batch_is_reported_with_its_fix(tf_models):
    pf = preflight(tf_models["dynamic"])
    assert pf.ops_on_tpu == 0
    assert pf.first_unsupported.index == 0 and pf.first_unsupported.code == "dynamic_shape"
    kinds = {p.kind: p for p in pf.problems}
    assert "dynamic_shape" in kinds and "[-1, 28, 28, 1]" in kinds["dynamic_shape"].message
    assert "static batch of 1" in kinds["dynamic_shape"].suggestion
    assert kinds["dynamic_shape"].blocking is True


def test_unsupported_op_in_the_middle_is_the_partition_point(tf_models):
    pf = preflight(tf_models["leaky_middle"])
    idx = ops_of(pf).index("LEAKY_RELU")
    assert 0 < idx < len(pf.ops) - 1
    first = pf.first_unsupported
    assert (first.index, first.op, first.code) == (idx, "LEAKY_RELU", "unsupported_op")
    assert [e.mapped for e in pf.ops] == [True] * idx + [False] * (len(pf.ops) - idx)
    assert all(e.code == "after_partition" for e in pf.ops[idx + 1 :])
    assert pf.ops_on_tpu == idx
    # the convolutions before the partition carry only part of the MACs
    assert 0 < pf.macs_on_tpu_fraction < 1
    (problem,) = [p for p in pf.problems if p.kind == "unsupported_activation"]
    assert "PReLU" in problem.suggestion and problem.blocking is True
    assert f"op {idx} LEAKY_RELU" in pf.summary


def test_transpose_left_by_layout_conversion_is_flagged(tf_models):
    pf = preflight(tf_models["transpose"])
    assert "TRANSPOSE" in ops_of(pf)
    assert pf.ops_on_tpu == pf.ops_total  # runtime 14 maps it ...
    (problem,) = [p for p in pf.problems if p.kind == "transpose"]
    assert "NCHW" in problem.message
    # ... but compiling for runtime 13 makes it the partition point
    pf13 = preflight(tf_models["transpose"], min_runtime=13)
    assert pf13.first_unsupported.op == "TRANSPOSE"


@pytest.mark.parametrize(
    ("model", "log"), [("int8io", "nrf20_mnist7_edgetpu.log"), ("float_io", "nrf20_mnist4_edgetpu.log")]
)
def test_prediction_agrees_with_real_compiler_logs_of_the_same_cnn(tf_models, fixtures_dir, model, log):
    report = parse_log("", (fixtures_dir / log).read_text())
    pf = preflight(tf_models[model])
    assert report.ops_total == pf.ops_total
    assert compare(pf, report) == []


def test_disagreements_are_shown_not_hidden(tf_models, fixtures_dir):
    report = parse_log((fixtures_dir / "f0cal_coral_issue20_mobilenetv2_float_io.txt").read_text())
    lines = compare(preflight(tf_models["float_io"]), report)
    assert any(line.startswith("ops on the Edge TPU: predicted 8 of 10, compiler mapped 70") for line in lines)
    assert any(line.startswith("ADD:") for line in lines)
    # a compiler that maps less than predicted names its own reason
    log = (
        (fixtures_dir / "nrf20_mnist4_edgetpu.log")
        .read_text()
        .replace(
            "SOFTMAX                        1          Mapped to Edge TPU",
            "SOFTMAX                        1          Operation is otherwise supported, but not mapped due to some "
            "unspecified limitation",
        )
    )
    lines = compare(preflight(tf_models["float_io"]), parse_log("", log))
    assert any("SOFTMAX: predicted 1 on the Edge TPU" in x and "unspecified limitation" in x for x in lines)
