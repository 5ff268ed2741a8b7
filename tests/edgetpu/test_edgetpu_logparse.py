"""The compiler-log parser on real edgetpu_compiler outputs (origins in tests/fixtures/edgetpu/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgekit.edgetpu.logparse import failure_reason, operators_table, parse_log, size_bytes

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "edgetpu"


def read(name: str) -> str:
    return (FIX / name).read_text()


def test_every_fixture_has_its_origin_in_the_readme():
    readme = read("README.md")
    names = [p.name for p in FIX.iterdir() if p.suffix in (".txt", ".log")]
    assert len(names) >= 10
    for name in names:
        assert f"`{name}`" in readme, f"{name} has no origin in README.md"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4.21MiB", 4414505), ("0.00B", 0), ("41.75KiB", 42752), ("7.75KiB", 7936), ("1.5GiB", 1610612736)],
)
def test_sizes_in_binary_units(text, expected):
    assert size_bytes(text) == expected


def test_v15_stdout_without_table():
    r = parse_log(read("coral_edgetpu_issue393_stdout.txt"))
    assert r.compiler_version == "15.0.340273435"
    assert r.success is True and r.failure is None
    assert r.compile_ms == 2644
    assert (r.ops_total, r.ops_on_tpu, r.ops_on_cpu) == (165, 117, 48)
    assert r.subgraphs == 1
    assert r.on_chip_memory_bytes == size_bytes("3.21MiB")
    assert r.on_chip_memory_remaining_bytes == size_bytes("3.78MiB")
    assert r.off_chip_memory_bytes == 0
    assert r.output_model == "./EdgeTPU/model_edgetpu.tflite"
    assert r.operation_log == "./EdgeTPU/model_edgetpu.log"
    assert r.operators == [] and r.operators_source is None


def test_operation_log_file_of_float_io_mnist():
    r = parse_log("", read("nrf20_mnist4_edgetpu.log"))
    assert r.compiler_version == "15.0.340273435"
    assert r.operators_source == "log" and r.operators_complete
    rows = {row.op: row for row in r.operators}
    assert rows["QUANTIZE"].mapped is False
    assert rows["QUANTIZE"].status.startswith("Operation is otherwise supported")
    assert rows["DEQUANTIZE"].status == "Operation is working on an unsupported data type"
    assert rows["CONV_2D"].to_dict() == {"op": "CONV_2D", "count": 2, "status": "Mapped to Edge TPU", "mapped": True}
    # no counts in a .log: they are derived from the complete table
    assert (r.ops_on_tpu, r.ops_on_cpu, r.ops_total) == (8, 2, 10)


def test_table_on_stdout_wins_and_counts_are_taken_as_printed():
    r = parse_log(read("f0cal_coral_issue20_mobilenetv2_float_io.txt"))
    assert (r.ops_on_tpu, r.ops_on_cpu, r.ops_total) == (70, 2, 72)
    assert sum(row.count for row in r.operators if row.mapped) == 70
    assert [row.op for row in r.operators if not row.mapped] == ["QUANTIZE", "DEQUANTIZE"]


def test_same_op_on_two_rows_with_different_status():
    r = parse_log(read("coral_edgetpu_issue60_more_than_one_subgraph_excerpt.txt"))
    concat = [row for row in r.operators if row.op == "CONCATENATION"]
    assert [(c.count, c.mapped) for c in concat] == [(1, False), (3, True)]
    assert concat[0].status == "More than one subgraph is not supported"
    assert r.compiler_version == "2.1.302470888"
    assert r.off_chip_memory_bytes == size_bytes("1.22MiB")
    assert (r.ops_on_tpu, r.ops_on_cpu) == (83, 10)  # printed counts, not the (cut) table


def test_zero_subgraphs_everything_on_cpu():
    r = parse_log(read("coral_edgetpu_issue708_no_subgraph_excerpt.txt"))
    assert r.success is True  # the compiler "succeeds" while mapping nothing
    assert (r.subgraphs, r.ops_on_tpu, r.ops_on_cpu) == (0, 0, 157)
    assert r.timeout_s == 180
    assert r.operators[0].status == "Operation is working on an unsupported data type"


def test_search_delegate_output_without_counts():
    r = parse_log(read("yolov7_pr1672_search_delegate_excerpt.txt"))
    assert r.attempts == 1
    assert r.compile_ms == 3133
    assert r.off_chip_memory_bytes == size_bytes("41.75KiB")
    assert all(row.mapped for row in r.operators)
    # the table is cut (106 of 246 ops); no counts were printed, which 16.0 does only when all ops map
    assert r.operators_complete is False
    assert (r.ops_total, r.ops_on_tpu, r.ops_on_cpu) == (246, 246, 0)


def test_fc_with_2d_output_status():
    rows, complete = operators_table(read("coral_edgetpu_issue27_fc_2d_output.txt"))
    assert complete and rows[0].op == "FULLY_CONNECTED" and not rows[0].mapped
    assert "2D output" in rows[0].status


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        (
            "coral_edgetpu_issue512_large_activations.txt",
            "Compilation failed due to large activation tensors in model.",
        ),
        ("coral_edgetpu_issue49_internal_error.txt", "Internal compiler error. Aborting!"),
        ("coral_edgetpu_issue686_timeout.txt", "Compilation timeout. This is usually caused by large activations."),
    ],
)
def test_failures_keep_the_compilers_words(name, reason):
    text = read(name)
    r = parse_log(text)
    assert r.success is False
    assert r.failure == reason == failure_reason(text)


def test_failure_then_success_counts_as_success():
    text = read("coral_edgetpu_issue512_large_activations.txt") + read("reconstructed_v16_mnist_all_mapped_stdout.txt")
    r = parse_log(text)
    assert r.success is True and r.failure is None
    assert r.errors == ["Restored original execution plan after delegate application failure."]


def test_all_mapped_stdout_derives_counts_from_its_table():
    r = parse_log(read("reconstructed_v16_mnist_all_mapped_stdout.txt"))
    assert (r.ops_total, r.ops_on_tpu, r.ops_on_cpu) == (8, 8, 0)


def test_partial_table_marker():
    text = (
        "Operator                       Count      Status\n\nQUANTIZE                       1          "
        "Operation is otherwise supported, but not mapped due to some unspecified limitation\n"
        "... All other operators were mapped successfully. See m_edgetpu.log.\n"
    )
    rows, complete = operators_table(text)
    assert len(rows) == 1 and complete is False


def test_garbage_is_not_a_report():
    r = parse_log("segmentation fault (core dumped)\n")
    assert r.success is None and r.operators == [] and r.ops_on_tpu is None
