"""Graph-level rewrites of an imported program, before any schedule: what a compiler does to a model
before it tiles loops (torch.compile's freezing, IREE's global optimizations), applied by `import`.

1. `nhwc`: NCHW convolutions and poolings become their NHWC forms between transposes, and the 1-D NCW ones
   their NWC forms (the weights' transpose is a constant and is folded; a zero/constant padding moves to
   the channels-last side), so the vector dimension is the channels (16 lanes) instead of an image width
   that 16 does not divide;
   Poolings follow when the program has convolutions: a pooling alone stays NCHW (measured: transposing
   its input costs more than the pooling);
2. `fold`: reshapes and transposes of constant weights are computed once here (torch-mlir emits
   `linalg.transpose` of every `Linear` weight, run on every call otherwise);
3. `pad`: a `tensor.pad` by a constant becomes a fill of the padded shape and an `insert_slice` of the
   input into it; with `eliminate-empty-tensors` in the compile pipeline the input's producer then writes
   straight into the padded buffer (a pad is otherwise a separate copy through MLIR's generic strided
   `memrefCopy`: 2.1 of the 3.3 ms of the pool stem block);
4. `fuse`: elementwise chains become one op (MLIR's `linalg-fuse-elementwise-ops`; transposes and
   broadcasts are generalized first so they fuse too, which cancels the transposes of 1. between two
   NHWC ops); not kept when the pass would turn a named contraction into a generic (`NAMED`). MLIR's pass
   fuses a producer only into its one consumer; a producer that only moves or casts its input (a
   transpose, a broadcast, an `extf`, a reshape) is first copied once per consumer (`copy_cheap_producers`)
   so that every consumer reads the input itself: a group norm after an NWC convolution then reads the
   convolution's result in place instead of a transposed copy and its float64 copy. The pass also moves
   reshapes through the linalg ops beside them; the named ops are fenced from it (`fence_named`).

The text rewrites (1-3) are plain Python on torch-mlir's printed form and leave any op they do not
recognize as it is; 3 parses the text with MLIR, so it runs in the loader process (`graph_here`), and
every result is still checked against PyTorch's output by the engine's first measurement.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

PASSES = ("nhwc", "fold", "pad", "fuse")

_NP = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64, "i32": np.int32, "i8": np.int8}
_SSA = r"%[\w.$-]+"
_RESOURCE = re.compile(r'^(\s*)([\w.$-]+): "0x([0-9A-Fa-f]+)"', re.M)
_CONST = re.compile(rf"^\s*({_SSA}) = arith\.constant dense_resource<([\w.$-]+)> : tensor<([\dx]+)x(\w+)>\s*$")
_RESHAPE = re.compile(rf"^(\s*)({_SSA}) = tensor\.(?:collapse|expand)_shape ({_SSA}) .* : tensor<[\dx]+x\w+> "
                      rf"into tensor<([\dx]+)x(\w+)>\s*$")
_TRANSPOSE = re.compile(rf"^(\s*)({_SSA}) = linalg\.transpose ins\(({_SSA}) : tensor<([\dx]+)x(\w+)>\) "
                        rf"outs\(({_SSA}) : tensor<([\dx]+)x\w+>\) permutation = \[([\d, ]+)\]\s*$")
_NCHW_OP = re.compile(rf"^(\s*)({_SSA}) = linalg\.(conv_2d_nchw_fchw|depthwise_conv_2d_nchw_chw|pooling_nchw_max|"
                      rf"pooling_nchw_sum|conv_1d_ncw_fcw|depthwise_conv_1d_ncw_cw|pooling_ncw_max|pooling_ncw_sum) (\{{[^}}]*\}}) ins\(({_SSA}), ({_SSA}) : tensor<([\dx]+)x(\w+)>, "
                      rf"tensor<([\dx]+)x\w+>\) outs\(({_SSA}) : tensor<([\dx]+)x\w+>\) -> tensor<[\dx]+x\w+>\s*$")
_GROUPED = re.compile(rf"^(\s*)({_SSA}) = linalg\.conv_2d_ngchw_gfchw (\{{[^}}]*\}}) ins\(({_SSA}), ({_SSA}) : "
                      rf"tensor<([\dx]+)x(\w+)>, tensor<([\dx]+)x\w+>\) outs\(({_SSA}) : tensor<([\dx]+)x\w+>\) "
                      rf"-> tensor<[\dx]+x\w+>\s*$")
_PAD = re.compile(rf"^(\s*)({_SSA}) = tensor\.pad ({_SSA}) low\[([\d, ]+)\] high\[([\d, ]+)\] \{{\s*$")
_PAD_END = re.compile(r"^\s*\} : tensor<([\dx]+)x(\w+)> to tensor<[\dx]+x\w+>\s*$")
_YIELD = re.compile(rf"^\s*tensor\.yield ({_SSA}) : \w+\s*$")
_FILL = re.compile(rf"^(\s*)({_SSA}) = linalg\.fill ins\(({_SSA}) : (\w+)\) outs\(({_SSA}) : tensor<[\dx]+x\w+>\)")

#: channels-first op -> (channels-last op, permutation of its second operand or None when it is only a window
#: shape); 2-D (NCHW -> NHWC) and 1-D (NCW -> NWC)
NHWC_FORM = {
    "conv_2d_nchw_fchw": ("conv_2d_nhwc_hwcf", (2, 3, 1, 0)),
    "depthwise_conv_2d_nchw_chw": ("depthwise_conv_2d_nhwc_hwc", (1, 2, 0)),
    "pooling_nchw_max": ("pooling_nhwc_max", None),
    "pooling_nchw_sum": ("pooling_nhwc_sum", None),
    "conv_1d_ncw_fcw": ("conv_1d_nwc_wcf", (2, 1, 0)),
    "depthwise_conv_1d_ncw_cw": ("depthwise_conv_1d_nwc_wc", (1, 0)),
    "pooling_ncw_max": ("pooling_nwc_max", None),
    "pooling_ncw_sum": ("pooling_nwc_sum", None),
}


def channels_last(rank: int) -> tuple[int, ...]:
    """NCHW -> NHWC (rank 4), NCW -> NWC (rank 3)."""
    return (0, *range(2, rank), 1)


def channels_first(rank: int) -> tuple[int, ...]:
    return (0, rank - 1, *range(1, rank - 1))


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split("x"))


def _ty(shape: tuple[int, ...], dtype: str) -> str:
    return f"tensor<{'x'.join(str(d) for d in shape)}x{dtype}>"


@dataclass
class Rewritten:
    text: str
    counts: dict[str, int]


class _Func:
    """The module's lines, its resource blobs, and fresh SSA names."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.blobs = {m.group(2): m.group(3) for m in _RESOURCE.finditer(text)}
        self.new_blobs: dict[str, str] = {}
        self.n = 0

    def fresh(self, stem: str) -> str:
        self.n += 1
        return f"%g{self.n}_{stem}"

    def uses(self, name: str) -> int:
        pat = re.compile(re.escape(name) + r"(?![\w.$-])")
        return sum(len(pat.findall(ln)) for ln in self.lines) - 1

    def text(self) -> str:
        out = "\n".join(self.lines)
        if self.new_blobs:
            entries = "".join(f',\n      {k}: "0x{v}"' for k, v in self.new_blobs.items())
            # after the last existing blob of the builtin dialect's resources
            last = list(_RESOURCE.finditer(out))
            if last:
                end = last[-1].end() + 1  # the closing quote
                out = out[:end] + entries + out[end:]
        return out


def fold_constants(f: _Func) -> int:
    """Reshapes and transposes of `dense_resource` constants become constants (the blob reshaped or
    transposed once, here). Returns how many were folded."""
    folded = 0
    changed = True
    while changed:
        changed = False
        consts = {}
        for ln in f.lines:
            m = _CONST.match(ln)
            if m:
                consts[m.group(1)] = (m.group(2), _shape(m.group(3)), m.group(4))
        for i, ln in enumerate(f.lines):
            if m := _RESHAPE.match(ln):
                indent, res, src, shape, dtype = m.groups()
                if src in consts:
                    key = consts[src][0]
                    f.lines[i] = f"{indent}{res} = arith.constant dense_resource<{key}> : {_ty(_shape(shape), dtype)}"
                    folded += 1
                    changed = True
            elif m := _TRANSPOSE.match(ln):
                indent, res, src, in_shape, dtype, _, out_shape, perm = m.groups()
                if src not in consts or dtype not in _NP:
                    continue
                key = consts[src][0]
                hexdata = f.blobs.get(key) or f.new_blobs.get(key)
                if hexdata is None:
                    continue
                raw = bytes.fromhex(hexdata)
                head, data = raw[:4], raw[4:]
                arr = np.frombuffer(data, _NP[dtype]).reshape(_shape(in_shape))
                p = tuple(int(x) for x in perm.split(","))
                t = np.ascontiguousarray(arr.transpose(p))
                new_key = f"{key}_T{''.join(str(x) for x in p)}"
                f.new_blobs[new_key] = (head + t.tobytes()).hex().upper()
                f.lines[i] = f"{indent}{res} = arith.constant dense_resource<{new_key}> : {_ty(t.shape, dtype)}"
                folded += 1
                changed = True
    return folded


def _transpose(f: _Func, indent: str, src: str, shape: tuple[int, ...], dtype: str, perm: tuple[int, ...],
               stem: str) -> tuple[list[str], str, tuple[int, ...]]:
    out_shape = tuple(shape[p] for p in perm)
    e, t = f.fresh(f"{stem}_init"), f.fresh(stem)
    return ([f"{indent}{e} = tensor.empty() : {_ty(out_shape, dtype)}",
             f"{indent}{t} = linalg.transpose ins({src} : {_ty(shape, dtype)}) outs({e} : {_ty(out_shape, dtype)}) "
             f"permutation = [{', '.join(str(p) for p in perm)}]"], t, out_shape)


@dataclass
class Pad:
    """A `tensor.pad` by one yielded value, lines `start`..`end` of the function."""

    start: int
    end: int
    indent: str
    result: str
    source: str
    low: tuple[int, ...]
    high: tuple[int, ...]
    value: str
    source_shape: tuple[int, ...]
    dtype: str
    padded_type: str


def pad_at(f: _Func, i: int) -> Pad | None:
    """The pad starting at line `i`, or None (not a pad, or not by one constant value)."""
    m = _PAD.match(f.lines[i])
    if m is None:
        return None
    end = next((j for j in range(i + 1, min(i + 6, len(f.lines))) if _PAD_END.match(f.lines[j])), None)
    if end is None:
        return None
    ys = [y for y in (_YIELD.match(b) for b in f.lines[i + 1:end]) if y]
    em = _PAD_END.match(f.lines[end])
    padded = re.search(r"to (tensor<[\dx]+x\w+>)", f.lines[end])
    if len(ys) != 1 or em is None or padded is None:
        return None
    indent, res, src, low, high = m.groups()
    return Pad(i, end, indent, res, src, tuple(int(x) for x in low.split(",")), tuple(int(x) for x in high.split(",")),
               ys[0].group(1), _shape(em.group(1)), em.group(2), padded.group(1))


def to_nhwc(f: _Func) -> int:
    """NCHW and NCW convolutions (and poolings, when there are convolutions) as NHWC and NWC ones between
    transposes; returns how many."""
    done = 0
    i = 0
    convs = any((m := _NCHW_OP.match(ln)) and "conv" in m.group(3) for ln in f.lines)
    while i < len(f.lines):
        m = _NCHW_OP.match(f.lines[i])
        if not m or ("pooling" in m.group(3) and not convs):
            i += 1
            continue
        indent, res, kind, attrs, inp, filt, in_shape, dtype, filt_shape, out, out_shape = m.groups()
        new_kind, fperm = NHWC_FORM[kind]
        rank = len(_shape(in_shape))
        to_last, to_first = channels_last(rank), channels_first(rank)
        new: list[str] = []
        pad = None
        if f.uses(inp) == 1:
            at = next((k for k, ln in enumerate(f.lines) if (pm := _PAD.match(ln)) and pm.group(2) == inp), None)
            pad = pad_at(f, at) if at is not None else None
            if pad is not None and (pad.low[:2] != (0, 0) or pad.high[:2] != (0, 0)):
                pad = None  # padding N or C: keep the NCHW pad
        if pad is not None:  # pad channels-last: transpose the unpadded input, then pad the spatial dims
            lines, t, t_shape = _transpose(f, indent, pad.source, pad.source_shape, dtype, to_last, "in")
            new += lines
            lo, hi = pad.low[2:], pad.high[2:]
            padded_shape = (t_shape[0], *(t_shape[1 + k] + lo[k] + hi[k] for k in range(rank - 2)), t_shape[-1])
            p = f.fresh("padded")
            idx = ", ".join(f"%{p[1:]}_i{k}: index" for k in range(rank))
            low, high = ", ".join(str(x) for x in (0, *lo, 0)), ", ".join(str(x) for x in (0, *hi, 0))
            new += [f"{indent}{p} = tensor.pad {t} low[{low}] high[{high}] {{",
                    f"{indent}^bb0({idx}):",
                    f"{indent}  tensor.yield {pad.value} : {dtype}",
                    f"{indent}}} : {_ty(t_shape, dtype)} to {_ty(padded_shape, dtype)}"]
            x, x_shape = p, padded_shape
        else:
            lines, x, x_shape = _transpose(f, indent, inp, _shape(in_shape), dtype, to_last, "in")
            new += lines
        if fperm is not None:
            lines, k, k_shape = _transpose(f, indent, filt, _shape(filt_shape), dtype, fperm, "filter")
            new += lines
        else:
            k, k_shape = filt, _shape(filt_shape)
        o_shape = _shape(out_shape)
        nhwc_out = tuple(o_shape[p] for p in to_last)
        fill = next((fm for fm in (_FILL.match(ln) for ln in f.lines[:i]) if fm and fm.group(2) == out), None)
        if fill is not None:  # the same fill in NHWC (a fill is no generic: it would not fuse with a transpose)
            e, o = f.fresh("out_init"), f.fresh("out")
            new += [f"{indent}{e} = tensor.empty() : {_ty(nhwc_out, dtype)}",
                    f"{indent}{o} = linalg.fill ins({fill.group(3)} : {fill.group(4)}) outs({e} : {_ty(nhwc_out, dtype)}) "
                    f"-> {_ty(nhwc_out, dtype)}"]
        else:
            lines, o, _ = _transpose(f, indent, out, o_shape, dtype, to_last, "out")
            new += lines
        r = f.fresh(new_kind.split("_")[0])
        new.append(f"{indent}{r} = linalg.{new_kind} {attrs} ins({x}, {k} : {_ty(x_shape, dtype)}, "
                   f"{_ty(k_shape, dtype)}) outs({o} : {_ty(nhwc_out, dtype)}) -> {_ty(nhwc_out, dtype)}")
        e = f.fresh("nchw_init")
        new += [f"{indent}{e} = tensor.empty() : {_ty(o_shape, dtype)}",
                f"{indent}{res} = linalg.transpose ins({r} : {_ty(nhwc_out, dtype)}) outs({e} : {_ty(o_shape, dtype)}) "
                f"permutation = [{', '.join(str(p) for p in to_first)}]"]
        f.lines[i:i + 1] = new
        i += len(new)
        if pad is not None:  # the NCHW pad had this one use
            del f.lines[pad.start:pad.end + 1]
            i -= pad.end + 1 - pad.start
        done += 1
    return done


def grouped_to_nhwc(f: _Func) -> int:
    """Grouped convolutions (`conv_2d_ngchw_gfchw`: a ResNeXt's, a ShuffleNet's) as one NHWC convolution
    per group: the input and the output in NHWC once (`N H W G C`, collapsed to `N H W G*C`), each group's
    channels a slice of them and its filter a slice of the filter transposed once (a constant: `fold`
    computes it at import). The vectorizer has no path for a grouped convolution (its schedules could not
    use V: a ResNeXt block ran 3.7x slower than PyTorch), and one per group keeps the data channels-last,
    where a split in PyTorch (a convolution per group on a channel slice, concatenated) put a transpose
    before and after every group. Returns how many."""
    done = 0
    i = 0
    while i < len(f.lines):
        m = _GROUPED.match(f.lines[i])
        if not m:
            i += 1
            continue
        indent, res, attrs, inp, filt, in_shape, dtype, filt_shape, out, out_shape = m.groups()
        n, g, c, h, w = _shape(in_shape)
        _, fo, _, kh, kw = _shape(filt_shape)
        _, _, _, ho, wo = _shape(out_shape)
        to_last = (0, 3, 4, 1, 2)
        new, x, _ = _transpose(f, indent, inp, (n, g, c, h, w), dtype, to_last, "in")
        lines, k, _ = _transpose(f, indent, filt, (g, fo, c, kh, kw), dtype, (0, 3, 4, 2, 1), "filter")
        new += lines
        lines, o, _ = _transpose(f, indent, out, (n, g, fo, ho, wo), dtype, to_last, "out")
        new += lines
        xc, acc = f.fresh("in_groups"), f.fresh("out_groups")
        new += [f"{indent}{xc} = tensor.collapse_shape {x} [[0], [1], [2], [3, 4]] : {_ty((n, h, w, g, c), dtype)} "
                f"into {_ty((n, h, w, g * c), dtype)}",
                f"{indent}{acc} = tensor.collapse_shape {o} [[0], [1], [2], [3, 4]] : "
                f"{_ty((n, ho, wo, g, fo), dtype)} into {_ty((n, ho, wo, g * fo), dtype)}"]
        x_ty, all_in = _ty((n, h, w, c), dtype), _ty((n, h, w, g * c), dtype)
        o_ty, all_out = _ty((n, ho, wo, fo), dtype), _ty((n, ho, wo, g * fo), dtype)
        k_ty = _ty((kh, kw, c, fo), dtype)
        for j in range(g):
            xs, ks, os_, cj, nxt = (f.fresh(s) for s in ("group_in", "group_filter", "group_init", "group", "acc"))
            new += [f"{indent}{xs} = tensor.extract_slice {xc}[0, 0, 0, {j * c}] [{n}, {h}, {w}, {c}] [1, 1, 1, 1] : "
                    f"{all_in} to {x_ty}",
                    f"{indent}{ks} = tensor.extract_slice {k}[{j}, 0, 0, 0, 0] [1, {kh}, {kw}, {c}, {fo}] "
                    f"[1, 1, 1, 1, 1] : {_ty((g, kh, kw, c, fo), dtype)} to {k_ty}",
                    f"{indent}{os_} = tensor.extract_slice {acc}[0, 0, 0, {j * fo}] [{n}, {ho}, {wo}, {fo}] "
                    f"[1, 1, 1, 1] : {all_out} to {o_ty}",
                    f"{indent}{cj} = linalg.conv_2d_nhwc_hwcf {attrs} ins({xs}, {ks} : {x_ty}, {k_ty}) "
                    f"outs({os_} : {o_ty}) -> {o_ty}",
                    f"{indent}{nxt} = tensor.insert_slice {cj} into {acc}[0, 0, 0, {j * fo}] [{n}, {ho}, {wo}, {fo}] "
                    f"[1, 1, 1, 1] : {o_ty} into {all_out}"]
            acc = nxt
        e = f.fresh("out_expanded")
        new.append(f"{indent}{e} = tensor.expand_shape {acc} [[0], [1], [2], [3, 4]] output_shape "
                   f"[{n}, {ho}, {wo}, {g}, {fo}] : {all_out} into {_ty((n, ho, wo, g, fo), dtype)}")
        init = f.fresh("ngchw_init")
        new += [f"{indent}{init} = tensor.empty() : {_ty((n, g, fo, ho, wo), dtype)}",
                f"{indent}{res} = linalg.transpose ins({e} : {_ty((n, ho, wo, g, fo), dtype)}) outs({init} : "
                f"{_ty((n, g, fo, ho, wo), dtype)}) permutation = [0, 3, 4, 1, 2]"]
        f.lines[i:i + 1] = new
        i += len(new)
        done += 1
    return done


def pads_to_inserts(f: _Func) -> int:
    """`tensor.pad` by a constant -> fill of the padded shape + `insert_slice`; returns how many."""
    done = 0
    i = 0
    while i < len(f.lines):
        pad = pad_at(f, i)
        if pad is None:
            i += 1
            continue
        e, fill, ty = f.fresh("pad_init"), f.fresh("pad_fill"), pad.padded_type
        ones = ", ".join(["1"] * len(pad.source_shape))
        f.lines[i:pad.end + 1] = [
            f"{pad.indent}{e} = tensor.empty() : {ty}",
            f"{pad.indent}{fill} = linalg.fill ins({pad.value} : {pad.dtype}) outs({e} : {ty}) -> {ty}",
            f"{pad.indent}{pad.result} = tensor.insert_slice {pad.source} into {fill}[{', '.join(map(str, pad.low))}] "
            f"[{', '.join(map(str, pad.source_shape))}] [{ones}] : {_ty(pad.source_shape, pad.dtype)} into {ty}"]
        i += 3
        done += 1
    return done


def rewrite_text(text: str, passes: tuple[str, ...] = PASSES) -> Rewritten:
    """The text rewrites (nhwc, fold, pad) of `passes`; `fuse` is `graph_here`'s."""
    f = _Func(text)
    counts = {}
    if "nhwc" in passes:
        counts["nhwc"] = to_nhwc(f) + grouped_to_nhwc(f)
    if "fold" in passes:
        counts["fold"] = fold_constants(f)
    if "pad" in passes:
        counts["pad"] = pads_to_inserts(f)
    return Rewritten(f.text(), counts)


GENERALIZE = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %ops = transform.structured.match ops{["linalg.transpose", "linalg.broadcast"]} in %root
      : (!transform.any_op) -> !transform.any_op
    %g = transform.structured.generalize %ops : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
"""


def graph_here(text: str, passes: tuple[str, ...] = PASSES) -> dict:
    """In the loader process: the text rewrites, then (with `fuse`) transposes and broadcasts generalized
    and elementwise ops fused; canonicalized either way. Returns the new text and what changed."""
    from mlir import ir
    from mlir.dialects.transform import interpreter
    from mlir.passmanager import PassManager

    rw = rewrite_text(text, passes)
    counts: dict = dict(rw.counts)
    ctx = ir.Context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(rw.text)
        before = _count_linalg(module)
        if "fuse" in passes:
            ctx.allow_unregistered_dialects = True  # the fences below
            for copy in (True, False):  # without the copies when they cost a named op
                fused = ir.Module.parse(rw.text)
                script = ir.Module.parse(GENERALIZE)
                interpreter.apply_named_sequence(fused.operation, script.body.operations[0], script.operation)
                copied = copy_cheap_producers(fused) if copy else 0
                fences = fence_named(fused)
                PassManager.parse("builtin.module(linalg-fuse-elementwise-ops)").run(fused.operation)
                unfence(fences)
                PassManager.parse("builtin.module(canonicalize,cse)").run(fused.operation)
                lost = _count_linalg(module, NAMED) - _count_linalg(fused, NAMED)
                if lost <= 0:
                    module, counts["copied"] = fused, copied
                    break
            else:
                counts["fuse_skipped"] = lost
        if "fuse" not in passes or "fuse_skipped" in counts:
            PassManager.parse("builtin.module(canonicalize,cse)").run(module.operation)
        return {"text": str(module), "counts": {**counts, "ops_before": before, "ops_after": _count_linalg(module)}}


#: what a cheap producer's body may compute besides yielding (a conversion of its one input)
_CASTS = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
          "arith.extsi", "arith.extui", "arith.trunci", "arith.bitcast")
_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _cheap(op) -> bool:
    """A reshape, or a linalg.generic of parallel loops whose body yields its one input or a cast of it
    (a copy, transpose, broadcast or conversion): recomputed in each consumer, it costs a read."""
    if op.name in _RESHAPES:
        return True
    if op.name != "linalg.generic" or len(op.results) != 1 or len(op.operands) != 2:
        return False
    if any("parallel" not in str(it) for it in op.attributes["iterator_types"]):
        return False
    block = op.regions[0].blocks[0]
    body, arg = list(block.operations), block.arguments[0]
    if len(body) == 1:
        return body[0].operands[0] == arg
    return len(body) == 2 and body[0].name in _CASTS and body[0].operands[0] == arg \
        and body[1].operands[0] == body[0].results[0]


def copy_cheap_producers(module) -> int:
    """Each linalg.generic or reshape consumer of a cheap producer (`_cheap`) with several consumers gets a
    copy of it of its own, last producer first (so a reshape's copies make its producer's consumers);
    `linalg-fuse-elementwise-ops` then fuses each copy into its consumer. Returns how many copies."""
    from mlir import ir

    made = 0
    for func in module.body.operations:
        if func.operation.name != "func.func":
            continue
        for op in reversed(list(func.regions[0].blocks[0].operations)):
            op = op.operation
            if not _cheap(op):
                continue
            uses = list(op.results[0].uses)
            fusable = [u for u in uses if u.owner.name in ("linalg.generic", *_RESHAPES)]
            if len(uses) < 2 or not fusable:
                continue
            for u in fusable[0 if len(fusable) < len(uses) else 1:]:  # the original stays with one consumer
                copy = op.clone(ip=ir.InsertionPoint(op))
                u.owner.operands[u.operand_number] = copy.results[0]
                made += 1
    return made


FENCE = "mlir_rl_tui.fence"


def fence_named(module) -> list:
    """Each tensor operand and result of a named op in `NAMED` passed through an op MLIR does not know
    (`FENCE`): `linalg-fuse-elementwise-ops` moves reshapes through the linalg ops next to them, which turns
    a batch matmul beside a reshape into a generic contraction; the fence keeps it named. Returns the
    fences for `unfence`."""
    from mlir import ir

    fences = []
    named = []

    def visit(op):
        if op.name.startswith(NAMED):
            named.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    for op in named:
        for k, v in enumerate(op.operands):
            if isinstance(v.type, ir.RankedTensorType):
                with ir.InsertionPoint(op), op.location:
                    fence = ir.Operation.create(FENCE, results=[v.type], operands=[v])
                op.operands[k] = fence.results[0]
                fences.append(fence)
        for r in op.results:
            with ir.InsertionPoint.after(op), op.location:
                fence = ir.Operation.create(FENCE, results=[r.type], operands=[r])
            r.replace_all_uses_except(fence.results[0], fence)
            fences.append(fence)
    return fences


def unfence(fences: list) -> None:
    for fence in fences:
        fence.results[0].replace_all_uses_with(fence.operands[0])
        fence.erase()


#: Named ops the vectorizer has a dedicated path for: `fuse` is not kept when its reshape propagation would
#: turn one into a linalg.generic (measured on the attention block: 0.087 -> 0.35 ms, the batch matmuls
#: became 5-D generic contractions).
NAMED = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv_", "linalg.depthwise_conv_", "linalg.pooling_")


def _count_linalg(module, prefixes: tuple[str, ...] = ("linalg.",)) -> int:
    n = 0

    def walk(op) -> None:
        nonlocal n
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    name = inner.operation.name
                    if name.startswith(prefixes) and name not in ("linalg.yield", "linalg.index"):
                        n += 1
                    walk(inner.operation)

    walk(module.operation)
    return n


def graph_passes(text: str, passes: tuple[str, ...] = PASSES, name: str = "<import>") -> dict:
    """`graph_here` in the loader process (MLIR's parser and passes cannot take the caller down);
    EngineError with one line on failure."""
    from mlir_rl_tui.engine.ir.loader import guarded

    res = guarded("graph", text, name=name, passes=list(passes))
    return {"text": res["text"], "counts": res["counts"]}
