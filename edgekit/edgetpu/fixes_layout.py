"""Edge TPU graph fix: data movement through 5-D tensors rewritten in at most 4 dimensions.

The Edge TPU maps a tensor only where the dimensions before its 3 innermost are 1, so a RESHAPE to 5-D stops
mapping there. Two common families move data that way:
- ShuffleNetV2's channel shuffle, reshape (N, g, C/g, H, W) -> transpose -> reshape (N, C, H, W), after the NHWC
  converter's TRANSPOSE to NCHW: torchvision's ShuffleNetV2 mapped 14 of 191 ops;
- a transformer's qkv split, reshape (1, T, 3, heads, d) -> transpose (2, 0, 3, 1, 4) -> three STRIDED_SLICEs
  (PP-OCRv4's recognizer: mapping stopped after 208 of 303 ops).

Such a region (RESHAPE, TRANSPOSE, SLICE, STRIDED_SLICE, SPLIT ops from one root tensor to the first tensors that fit
the Edge TPU again) only moves elements, so each of its outputs is `root.flat[idx]` for an index array that running the
region on `arange` gives. Where that index array factors as "pick channels of the root's last axis, reshape,
transpose", the region is replaced by those ops in at most 4 dimensions: a SLICE where the channels picked are a
contiguous run, else a 1x1 CONV_2D whose filter is the 0/1 selection (permutation) matrix. Exact in float (a weight of
1.0 and 0.0 elsewhere; int8: 1.0 is a weight of 127 at scale 1/127, and the output keeps the input's range).
"""

from __future__ import annotations

from itertools import permutations

import numpy as np

from edgekit.tflite.flatbuffer import FLOAT32, FlatModel

_MOVES = ("RESHAPE", "TRANSPOSE", "SLICE", "STRIDED_SLICE", "SPLIT")


def _shape(f: FlatModel, t: int) -> list[int]:
    s = f.sg.tensors[t].shape
    return [int(d) for d in s] if s is not None else []


def _bad(shape: list[int]) -> bool:
    """A shape the Edge TPU refuses: a dimension larger than 1 before the 3 innermost."""
    return any(d > 1 for d in shape[:-3])


def _data_input(f: FlatModel, k: int) -> int:
    return int(f.sg.operators[k].inputs[1 if f.name(k) == "SPLIT" else 0])


def _strided_slice(f: FlatModel, k: int, x: np.ndarray) -> np.ndarray | None:
    op = f.sg.operators[k]
    begin, end, strides = (f.int_const(int(op.inputs[i])) for i in (1, 2, 3))
    o = op.builtinOptions
    if begin is None or end is None or strides is None or o is None or o.ellipsisMask or o.newAxisMask:
        return None
    index: list[int | slice | None] = []
    for d in range(x.ndim):
        b = None if o.beginMask >> d & 1 else int(begin[d])
        e = None if o.endMask >> d & 1 else int(end[d])
        index.append(b if o.shrinkAxisMask >> d & 1 else slice(b, e, int(strides[d])))
    return x[tuple(index)]


def _run(f: FlatModel, k: int, x: np.ndarray) -> list[np.ndarray] | None:
    """The outputs of move op K on the array X, or None where its constants cannot be read."""
    op, name = f.sg.operators[k], f.name(k)
    if name == "RESHAPE":
        return [x.reshape(_shape(f, int(op.outputs[0])))]
    if name == "TRANSPOSE":
        perm = f.int_const(int(op.inputs[1]))
        return None if perm is None else [x.transpose([int(p) for p in perm])]
    if name == "SLICE":
        begin, size = f.int_const(int(op.inputs[1])), f.int_const(int(op.inputs[2]))
        if begin is None or size is None:
            return None
        return [x[tuple(slice(int(b), None if s < 0 else int(b + s)) for b, s in zip(begin, size, strict=True))]]
    if name == "STRIDED_SLICE":
        y = _strided_slice(f, k, x)
        return None if y is None else [y]
    axis = f.int_const(int(op.inputs[0]))  # SPLIT
    return None if axis is None else np.split(x, len(op.outputs), axis=int(axis.reshape(-1)[0]))


def _region(f: FlatModel, root: int, first: list[int]) -> tuple[list[int], list[int]] | None:
    """(the ops from ROOT through the chain FIRST and every move after it up to tensors that fit, those tensors)."""
    ops, leaves = list(first), []
    stack = [int(t) for t in f.sg.operators[first[-1]].outputs]
    outputs = {int(t) for t in f.sg.outputs}
    while stack:
        t = stack.pop()
        readers = f.readers.get(t, [])
        shape = _shape(f, t)
        fits = not _bad(shape) and not (len(shape) > 4 and len(readers) == 1 and f.name(readers[0]) == "RESHAPE")
        if fits:
            leaves.append(t)
            continue
        if t in outputs or not readers:
            return None
        for r in readers:
            if f.name(r) not in _MOVES or _data_input(f, r) != t:
                return None
            if r not in ops:
                ops.append(r)
                stack.extend(int(o) for o in f.sg.operators[r].outputs)
    return sorted(ops), leaves


def _factor(idx: np.ndarray, root: list[int]) -> tuple[np.ndarray, list[int], list[int]] | None:
    """(channels picked from ROOT's last axis, the shape they are reshaped to, the transpose after) giving IDX."""
    c = root[-1]
    outer = int(np.prod(root[:-1]))
    if len(idx.shape) > 4 or idx.size % outer:
        return None
    for q in permutations(range(idx.ndim)):
        z = idx.transpose(np.argsort(q))
        if _bad(list(z.shape)):
            continue
        rows = z.reshape(outer, -1)
        p = rows[0]
        if p.max() < c and np.array_equal(rows, (np.arange(outer) * c)[:, None] + p[None, :]):
            return p, list(z.shape), list(q)
    return None


def _picked(f: FlatModel, root: int, p: np.ndarray, base: str) -> tuple[int, list[object]] | None:
    """(the tensor holding channels P of ROOT's last axis, the ops that make it)."""
    shape = _shape(f, root)
    if len(p) == shape[-1] and np.array_equal(p, np.arange(len(p))):
        return root, []
    out = f.add_like(f"{base}/picked", root)
    f.sg.tensors[out].shape = np.array([*shape[:-1], len(p)], np.int32)
    f.sg.tensors[out].shapeSignature = None
    if np.array_equal(p, p[0] + np.arange(len(p))):
        begin = f.add_int32(f"{base}/slice_begin", np.array([0] * (len(shape) - 1) + [int(p[0])], np.int32))
        size = f.add_int32(f"{base}/slice_size", np.array([*shape[:-1], len(p)], np.int32))
        return out, [f.make_op("SLICE", [root, begin, size], [out], f.schema.SliceOptionsT(),
                               f.schema.BuiltinOptions.SliceOptions)]
    if len(shape) != 4 or shape[0] != 1:
        return None
    w = np.zeros((len(p), 1, 1, shape[-1]), np.float32)
    w[np.arange(len(p)), 0, 0, p] = 1.0
    conv = f.schema.Conv2DOptionsT()
    conv.padding, conv.strideW, conv.strideH = f.schema.Padding.VALID, 1, 1
    conv.dilationWFactor = conv.dilationHFactor = 1
    ins = [root, f.add_const(f"{base}/select", w), f.add_const(f"{base}/select_bias", np.zeros(len(p), np.float32))]
    return out, [f.make_op("CONV_2D", ins, [out], conv, f.schema.BuiltinOptions.Conv2DOptions)]


def _factors(idx: np.ndarray, root: list[int]) -> tuple[np.ndarray, list[int], list[int]] | None:
    """`_factor` of IDX without its leading 1s (None where one is larger)."""
    lead = idx.shape[:-4]
    return None if any(d != 1 for d in lead) else _factor(idx.reshape(idx.shape[len(lead):]), root)


def _plain(f: FlatModel, root: int, leaf: int, idx: np.ndarray) -> list[object] | None:
    """The ops that make LEAF (= ROOT.flat[IDX]) from ROOT by channel pick, reshape and transpose, or None."""
    lead = idx.shape[:-4]
    found = _factors(idx, _shape(f, root))
    if found is None:
        return None
    p, zshape, q = found
    base = f.tensor_name(leaf)
    picked = _picked(f, root, p, base)
    if picked is None:
        return None
    t, ops = picked
    steps = [] if _shape(f, t) == zshape else ["reshape"]
    steps += [] if q == sorted(q) else ["transpose"]
    if lead or not steps:  # back to the leaf's 5-D shape (leading 1s); or the leaf must be written by an op
        steps.append("reshape")
    shapes = {"reshape": zshape, "transpose": [zshape[i] for i in q]}
    for n, step in enumerate(steps):
        last = n == len(steps) - 1
        out = leaf if last else f.add_like(f"{base}/as_4d_{n}", leaf)
        if not last:
            f.sg.tensors[out].shape = np.array(shapes[step], np.int32)
            f.sg.tensors[out].shapeSignature = None
        if step == "reshape":
            ops.append(f.reshape_op(t, out, _shape(f, out), f"{base}/{n}"))
        else:
            perm = f.add_int32(f"{base}/perm", np.array(q, np.int32))
            ops.append(f.make_op("TRANSPOSE", [t, perm], [out], f.schema.TransposeOptionsT(),
                                 f.schema.BuiltinOptions.TransposeOptions))
        t = out
    return ops


def _blocks(shape: list[int]) -> np.ndarray | None:
    """For a [1, H, W, C] tensor X with even H and W: which element of X each element of SPACE_TO_DEPTH(X, 2),
    reshaped to [1, H/2 * W/2, 4, C], holds (TFLite's depth order: (dy * 2 + dx) * C + c); None for other shapes."""
    if len(shape) != 4 or shape[0] != 1 or shape[1] % 2 or shape[2] % 2:
        return None
    _, h, w, c = shape
    cells = np.arange(h * w * c).reshape(1, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 2, 4, 5)
    return cells.reshape(1, h // 2 * w // 2, 4, c)


def _new(f: FlatModel, name: str, like: int, shape: list[int]) -> int:
    t = f.add_like(name, like)
    f.sg.tensors[t].shape = np.array(shape, np.int32)
    f.sg.tensors[t].shapeSignature = None
    return t


def _through_space_to_depth(f: FlatModel, root: int, leaf: int, idx: np.ndarray) -> list[object] | None:
    """LEAF made from SPACE_TO_DEPTH(ROOT, 2) by channel pick, reshape and transpose: MobileViT's unfold into 2 x 2
    patches, (B, C, H/2, 2, W/2, 2) -> permute -> (B, C, 4, N) in 6-D, is a SPACE_TO_DEPTH and a 4-D transpose."""
    shape = _shape(f, root)
    cells = _blocks(shape)
    if cells is None:
        return None
    where = np.empty(cells.size, np.int64)
    where[cells.ravel()] = np.arange(cells.size)  # root element -> its place in the blocks
    if _factors(where[idx], list(cells.shape)) is None:
        return None
    base = f.tensor_name(leaf)
    s2d = _new(f, f"{base}/space_to_depth", root, [1, shape[1] // 2, shape[2] // 2, 4 * shape[3]])
    blocks = _new(f, f"{base}/blocks", root, list(cells.shape))
    opts = f.schema.SpaceToDepthOptionsT()
    opts.blockSize = 2
    ops = [f.make_op("SPACE_TO_DEPTH", [root], [s2d], opts, f.schema.BuiltinOptions.SpaceToDepthOptions),
           f.reshape_op(s2d, blocks, list(cells.shape), f"{base}/blocks")]
    rest = _plain(f, blocks, leaf, where[idx])
    return None if rest is None else ops + rest


def _through_depth_to_space(f: FlatModel, root: int, leaf: int, idx: np.ndarray) -> list[object] | None:
    """LEAF made by a depth-to-space of 2 x 2 blocks (MobileViT's fold of patches back into a map, 6-D in the
    model), whose Edge TPU form is a TRANSPOSE_CONV 2 x 2, stride 2, with a 0/1 selection filter (DEPTH_TO_SPACE
    is not in Coral's table): each output element is one input element times 1.0, exact in float."""
    if idx.ndim != 4 or idx.shape[0] != 1:
        return None
    for axes in permutations((1, 2, 3)):
        perm = [0, *axes]
        nhwc = idx.transpose(perm)
        cells = _blocks(list(nhwc.shape))
        if cells is None or _factors(nhwc.ravel()[cells], _shape(f, root)) is None:
            continue
        _, h, w, c = nhwc.shape
        base = f.tensor_name(leaf)
        blocks = _new(f, f"{base}/blocks", leaf, list(cells.shape))
        ops = _plain(f, root, blocks, nhwc.ravel()[cells])
        if ops is None:
            return None
        depth = _new(f, f"{base}/depth", leaf, [1, h // 2, w // 2, 4 * c])
        out = leaf if perm == [0, 1, 2, 3] else _new(f, f"{base}/nhwc", leaf, [1, h, w, c])
        pick = np.zeros((c, 2, 2, 4 * c), np.float32)
        for dy in range(2):
            for dx in range(2):
                pick[np.arange(c), dy, dx, (dy * 2 + dx) * c + np.arange(c)] = 1.0
        opts = f.schema.TransposeConvOptionsT()
        opts.padding, opts.strideH, opts.strideW = f.schema.Padding.VALID, 2, 2
        size = f.add_int32(f"{base}/output_shape", np.array([1, h, w, c], np.int32))
        ops += [f.reshape_op(blocks, depth, [1, h // 2, w // 2, 4 * c], f"{base}/depth"),
                f.make_op("TRANSPOSE_CONV", [size, f.add_const(f"{base}/depth_to_space", pick), depth], [out], opts,
                          f.schema.BuiltinOptions.TransposeConvOptions)]
        if out != leaf:
            back = f.add_int32(f"{base}/perm", np.array(np.argsort(perm), np.int32))
            ops.append(f.make_op("TRANSPOSE", [out, back], [leaf], f.schema.TransposeOptionsT(),
                                 f.schema.BuiltinOptions.TransposeOptions))
        return ops
    return None


def _rewrite(f: FlatModel, root: int, leaf: int, idx: np.ndarray) -> list[object] | None:
    """The ops that make LEAF (= ROOT.flat[IDX]) in at most 4 dimensions: channel pick, reshape and transpose, after
    a SPACE_TO_DEPTH or before a depth-to-space where those are needed; None where none of these does it."""
    return _plain(f, root, leaf, idx) or _through_space_to_depth(f, root, leaf, idx) or \
        _through_depth_to_space(f, root, leaf, idx)


def _roots(f: FlatModel, k: int) -> list[tuple[int, list[int]]]:
    """(root tensor, the chain of single-reader RESHAPE/TRANSPOSE ops from it to op K), furthest root first."""
    chain, t = [k], _data_input(f, k)
    found = [(t, list(chain))]
    while (p := f.producer.get(t)) is not None and f.name(p) in ("RESHAPE", "TRANSPOSE") \
            and f.only_reader(t) is not None:
        chain.insert(0, p)
        t = _data_input(f, p)
        found.append((t, list(chain)))
    return found[::-1]


def _one(f: FlatModel) -> bool:
    for k in range(len(f.sg.operators)):
        if f.name(k) not in _MOVES or not any(_bad(_shape(f, int(o))) for o in f.sg.operators[k].outputs):
            continue
        for root, chain in _roots(f, k):
            if _bad(_shape(f, root)) or f.sg.tensors[root].type != FLOAT32 or root in [int(o) for o in f.sg.outputs]:
                continue
            if (found := _region(f, root, chain)) is None:
                continue
            ops, leaves = found
            values = {root: np.arange(int(np.prod(_shape(f, root)))).reshape(_shape(f, root))}
            for r in ops:
                outs = _run(f, r, values[_data_input(f, r)])
                if outs is None or [list(o.shape) for o in outs] != [_shape(f, int(t)) for t in
                                                                    f.sg.operators[r].outputs]:
                    break
                values.update({int(t): o for t, o in zip(f.sg.operators[r].outputs, outs, strict=True)})
            else:
                new: list[object] = []
                for leaf in leaves:
                    made = _rewrite(f, root, leaf, values[leaf])
                    if made is None:
                        break
                    new += made
                else:
                    at = ops[0]
                    for r in reversed(ops):
                        del f.sg.operators[r]
                    f.sg.operators[at:at] = new
                    f.reindex()
                    return True
    return False


def five_d_moves(f: FlatModel) -> int:
    """Rewrite every 5-D data-movement region that factors as pick channels / reshape / transpose; how many."""
    done = 0
    while _one(f):
        done += 1
    return done


__all__ = ["five_d_moves"]
