"""Edge TPU graph fixes for the attention hybrids of 2024-26 (issue 41): exact rewrites of ops the compiler refuses.

- SOFTMAX over the last axis of a tensor with several rows: Coral's table takes a 1-D softmax only, and MobileViTv2's
  separable attention takes one over the N patches for each of the 4 pixels of a 2 x 2 patch ([1, 4, 1, N] in the
  TFLite model; mapping stopped there once its unfold was 4-D). Softmax is computed row by row, so with at most
  MAX_ROWS rows it becomes RESHAPE to [1, R, N], SPLIT into R rows, one 1-D SOFTMAX each, CONCATENATION, RESHAPE
  back: the same values. EfficientFormerV2's softmax over [heads, N, N] (392 rows at 224 x 224) is left alone: one
  op per row is more than the TPU part would win, and the BATCH_MATMUL before it stops mapping anyway.
- PADV2 with a finite value on one axis (EfficientViT's `F.pad(v, (0, 1), value=1.0)`: the column of ones of its
  linear attention): PAD with zeros, then ADD of a constant that holds the value in the padded cells and 0 elsewhere,
  broadcast along the other axes. PAD and ADD are in Coral's table; x + 0 and 0 + value are exact. A "minus
  infinity" (-FLT_MAX: a padded MaxPool) is left to edgekit.edgetpu.fixes, since the ADD's int8 range would hold it.
- MEAN over a whole sample whose last axis is no multiple of 4 (MobileViTv2's GroupNorm(1) over [C, P, N] with
  N = 49): Coral's Mean reduces along z only with a multiple of 4 channels; the same values seen as [1, 1, E / c, c]
  with c a multiple of 4 have the same mean.
"""

from __future__ import annotations

import numpy as np

from edgekit.tflite.flatbuffer import FlatModel

MAX_ROWS = 16  # a softmax split into more 1-D ones than this is left as it is
MAX_SOFTMAX = 16000  # Coral: "Supports only 1-D input tensor with a max of 16,000 elements"
HUGE = 1e30  # a PADV2 value this large is a padded MaxPool's "minus infinity", which an ADD would put in the int8 range


def softmax_rows(shape: list[int]) -> int:
    """How many 1-D softmaxes a softmax over the last axis of SHAPE is (the product of the other dimensions)."""
    return int(np.prod(shape[:-1])) if shape else 1


def softmax_by_rows(f: FlatModel) -> int:
    """Every SOFTMAX of 2 to MAX_ROWS rows as one 1-D SOFTMAX a row; how many."""
    done = k = 0
    while k < len(f.sg.operators):
        op = f.sg.operators[k]
        shape = [int(d) for d in f.sg.tensors[int(op.inputs[0])].shape] if f.name(k) == "SOFTMAX" else []
        rows = softmax_rows(shape)
        if not shape or rows < 2 or rows > MAX_ROWS or shape[-1] > MAX_SOFTMAX:
            k += 1
            continue
        x, y, n = int(op.inputs[0]), int(op.outputs[0]), shape[-1]
        base = f.tensor_name(y)

        def tensor(name: str, dims: list[int], like: int = x, base: str = base) -> int:
            t = f.add_like(f"{base}/{name}", like)
            f.sg.tensors[t].shape = np.array(dims, np.int32)
            f.sg.tensors[t].shapeSignature = None
            return t

        table, parts = tensor("rows", [1, rows, n]), [tensor(f"row_{r}", [1, 1, n]) for r in range(rows)]
        outs, joined = [tensor(f"softmax_{r}", [1, 1, n], y) for r in range(rows)], tensor("joined", [1, rows, n], y)
        split_opts = f.schema.SplitOptionsT()
        split_opts.numSplits = rows
        cat_opts = f.schema.ConcatenationOptionsT()
        cat_opts.axis = 1
        ops = [f.reshape_op(x, table, [1, rows, n], f"{base}/rows"),
               f.make_op("SPLIT", [f.add_int32(f"{base}/split_axis", np.array(1, np.int32)), table], parts,
                         split_opts, f.schema.BuiltinOptions.SplitOptions)]
        ops += [f.make_op("SOFTMAX", [p], [o], op.builtinOptions, op.builtinOptionsType)
                for p, o in zip(parts, outs, strict=True)]
        ops += [f.make_op("CONCATENATION", outs, [joined], cat_opts, f.schema.BuiltinOptions.ConcatenationOptions),
                f.reshape_op(joined, y, shape, f"{base}/back")]
        f.sg.operators[k:k + 1] = ops
        f.reindex()
        k += len(ops)
        done += 1
    return done


def padv2_value(f: FlatModel) -> int:
    """Every PADV2 with a finite value on one axis as PAD (and ADD of the value where it is not 0); how many."""
    done = k = 0
    while k < len(f.sg.operators):
        op = f.sg.operators[k]
        value = f.const(int(op.inputs[2])) if f.name(k) == "PADV2" and len(op.inputs) > 2 else None
        pads = f.int_const(int(op.inputs[1])) if value is not None else None
        if value is None or value.size != 1 or not np.all(np.abs(value) < HUGE) or pads is None:
            k += 1
            continue
        pads = pads.reshape(-1, 2)
        axes = [a for a in range(len(pads)) if pads[a].any()]
        y = int(op.outputs[0])
        out_shape = [int(d) for d in f.sg.tensors[y].shape]
        if len(axes) != 1 or len(out_shape) != len(pads):
            k += 1
            continue
        a, c = axes[0], float(value.reshape(-1)[0])
        base = f.tensor_name(y)
        pad = f.make_op("PAD", [int(op.inputs[0]), int(op.inputs[1])], [y], f.schema.PadOptionsT(),
                        f.schema.BuiltinOptions.PadOptions)
        if c == 0.0:
            f.sg.operators[k] = pad
            k += 1
            done += 1
            continue
        mask_shape = [1] * len(out_shape)
        mask_shape[a] = out_shape[a]
        mask = np.zeros(out_shape[a], np.float32)
        mask[:int(pads[a][0])] = c
        mask[out_shape[a] - int(pads[a][1]):] = c
        zeros = f.add_like(f"{base}/zero_padded", y)
        pad.outputs = np.array([zeros], np.int32)
        add_opts, add_type = f.fused("ADD")
        const = f.add_const(f"{base}/pad_value", mask.reshape(mask_shape))
        f.sg.operators[k:k + 1] = [pad, f.make_op("ADD", [zeros, const], [y], add_opts, add_type)]
        f.reindex()
        k += 2
        done += 1
    f.reindex()
    return done


def _whole_mean_shape(f: FlatModel, k: int) -> list[int] | None:
    """For a MEAN over every axis but the batch whose last axis is no multiple of 4 (the Edge TPU reduces along z
    only with a multiple of 4 channels): the [1, 1, E / c, c] shape, c a multiple of 4, that holds the same values."""
    op = f.sg.operators[k]
    shape = [int(d) for d in f.sg.tensors[int(op.inputs[0])].shape]
    axes = f.int_const(int(op.inputs[1])) if len(op.inputs) > 1 else None
    if axes is None or len(shape) < 2 or shape[0] != 1 or shape[-1] % 4 == 0:
        return None
    if {int(a) % len(shape) for a in axes.reshape(-1)} != set(range(1, len(shape))):
        return None
    size = int(np.prod(shape))
    c = max((m for m in range(4, min(size, 4096) + 1, 4) if size % m == 0), default=0)
    return [1, 1, size // c, c] if c else None


def whole_mean(f: FlatModel) -> int:
    """Every MEAN over all of a sample (GroupNorm(1)'s mean and variance: MobileViTv2 over [C, P, N], N = 49) whose
    last axis is no multiple of 4, taken over a [1, 1, E / c, c] view instead, c a multiple of 4: a mean of the same
    values (exact to the order of the sum); how many."""
    done = k = 0
    while k < len(f.sg.operators):
        view = _whole_mean_shape(f, k) if f.name(k) == "MEAN" else None
        if view is None:
            k += 1
            continue
        op = f.sg.operators[k]
        x, y = int(op.inputs[0]), int(op.outputs[0])
        base = f.tensor_name(y)
        flat, mean = f.add_like(f"{base}/view", x), f.add_like(f"{base}/view_mean", y)
        f.sg.tensors[flat].shape, f.sg.tensors[mean].shape = np.array(view, np.int32), np.array([1] * 4, np.int32)
        f.sg.tensors[flat].shapeSignature = f.sg.tensors[mean].shapeSignature = None
        opts = f.schema.ReducerOptionsT()
        opts.keepDims = True
        out_shape = [int(d) for d in f.sg.tensors[y].shape]
        f.sg.operators[k:k + 1] = [
            f.reshape_op(x, flat, view, f"{base}/view"),
            f.make_op("MEAN", [flat, f.add_int32(f"{base}/view_axes", np.array([1, 2, 3], np.int32))], [mean], opts,
                      f.schema.BuiltinOptions.ReducerOptions),
            f.reshape_op(mean, y, out_shape, f"{base}/back")]
        f.reindex()
        k += 3
        done += 1
    return done


__all__ = ["MAX_ROWS", "MAX_SOFTMAX", "padv2_value", "softmax_by_rows", "softmax_rows", "whole_mean"]
