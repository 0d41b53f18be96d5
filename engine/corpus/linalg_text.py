"""MLIR text of linalg ops on tensors, SSA value by SSA value: what the data set generator (engine.corpus.generator) writes."""

from __future__ import annotations

import numpy as np


def _t(shape) -> str:
    return "tensor<" + "x".join(str(s) for s in shape) + "xf32>"


def _map(n: int, dims) -> str:
    d = ", ".join(f"d{i}" for i in range(n))
    return f"affine_map<({d}) -> ({', '.join(f'd{i}' for i in dims)})>"


class Module:
    """Emits one function body, SSA value by SSA value."""

    def __init__(self) -> None:
        self.args: list[tuple[int, ...]] = []
        self.lines: list[str] = []
        self.n = 0
        self.flops = 0

    def arg(self, shape) -> str:
        self.args.append(tuple(shape))
        return f"%arg{len(self.args) - 1}"

    def val(self) -> str:
        self.n += 1
        return f"%{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append("  " + line)

    def empty(self, shape) -> str:
        v = self.val()
        self.emit(f"{v} = tensor.empty() : {_t(shape)}")
        return v

    def filled(self, shape, cst: str) -> str:
        e = self.empty(shape)
        v = self.val()
        self.emit(f"{v} = linalg.fill ins({cst} : f32) outs({e} : {_t(shape)}) -> {_t(shape)}")
        return v

    def generic(self, ins: list[tuple[str, tuple, list[int]]], out: tuple, out_dims: list[int], n_loops: int,
                iterators: list[str], body: list[str], init: str | None = None) -> str:
        """A linalg.generic; `body` uses %in0.., %out and ends with the yielded value in its last line."""
        maps = [_map(n_loops, dims) for _, _, dims in ins] + [_map(n_loops, out_dims)]
        init = init or self.empty(out)
        v = self.val()
        names = ", ".join(x for x, _, _ in ins)
        types = ", ".join(_t(s) for _, s, _ in ins)
        its = ", ".join(f'"{i}"' for i in iterators)
        block = ", ".join(f"%in{i}: f32" for i in range(len(ins))) + ", %out: f32"
        self.emit(f"{v} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}} "
                  f"ins({names} : {types}) outs({init} : {_t(out)}) {{")
        self.emit(f"^bb0({block}):")
        for ln in body[:-1]:
            self.emit("  " + ln)
        self.emit(f"  linalg.yield {body[-1]} : f32")
        self.emit(f"}} -> {_t(out)}")
        return v

    def text(self, result: str, result_shape, comment: str) -> str:
        args = ", ".join(f"%arg{i}: {_t(s)}" for i, s in enumerate(self.args))
        head = [f"// {comment}", f"func.func @forward({args}) -> {_t(result_shape)} {{",
                "  %cst = arith.constant 0.000000e+00 : f32", "  %cst_1 = arith.constant 1.000000e+00 : f32",
                "  %cst_ninf = arith.constant 0xFF800000 : f32"]
        return "\n".join(head + self.lines + [f"  return {result} : {_t(result_shape)}", "}", ""])


# ----------------------------------------------------------------------------------------------
# Ops: each takes the module, its input (value, shape) and the generator; returns (value, shape, label).
def op_matmul(m: Module, x: str, shape: tuple, n: int) -> tuple[str, tuple]:
    rows, k = shape
    w = m.arg((k, n))
    acc = m.filled((rows, n), "%cst")
    v = m.val()
    m.emit(f"{v} = linalg.matmul ins({x}, {w} : {_t(shape)}, {_t((k, n))}) outs({acc} : {_t((rows, n))}) "
           f"-> {_t((rows, n))}")
    m.flops += 2 * rows * n * k
    return v, (rows, n)


def op_add(m: Module, x: str, shape: tuple) -> tuple[str, tuple]:
    y = m.arg(shape)
    out = m.empty(shape)
    v = m.val()
    m.emit(f"{v} = linalg.add ins({x}, {y} : {_t(shape)}, {_t(shape)}) outs({out} : {_t(shape)}) -> {_t(shape)}")
    m.flops += int(np.prod(shape))
    return v, shape


def _elementwise(m: Module, x: str, shape: tuple, body: list[str], cost: int) -> tuple[str, tuple]:
    n = len(shape)
    m.flops += cost * int(np.prod(shape))
    return m.generic([(x, shape, list(range(n)))], shape, list(range(n)), n, ["parallel"] * n, body), shape


def op_relu(m: Module, x: str, shape: tuple) -> tuple[str, tuple]:
    return _elementwise(m, x, shape, ["%r = arith.maximumf %in0, %cst : f32", "%r"], 1)


def op_sigmoid(m: Module, x: str, shape: tuple) -> tuple[str, tuple]:
    body = ["%a = arith.negf %in0 : f32", "%b = math.exp %a : f32", "%c = arith.addf %b, %cst_1 : f32",
            "%r = arith.divf %cst_1, %c : f32", "%r"]
    return _elementwise(m, x, shape, body, 4)


def op_softmax(m: Module, x: str, shape: tuple) -> tuple[str, tuple]:
    """Row softmax of a 2-D tensor: max, exp(x - max), sum, divide - four linalg.generic ops."""
    rows, cols = shape
    red = ["parallel", "reduction"]
    mx = m.generic([(x, shape, [0, 1])], (rows,), [0], 2, red, ["%r = arith.maximumf %in0, %out : f32", "%r"],
                   init=m.filled((rows,), "%cst_ninf"))
    ex = m.generic([(x, shape, [0, 1]), (mx, (rows,), [0])], shape, [0, 1], 2, ["parallel"] * 2,
                   ["%a = arith.subf %in0, %in1 : f32", "%r = math.exp %a : f32", "%r"])
    sm = m.generic([(ex, shape, [0, 1])], (rows,), [0], 2, red, ["%r = arith.addf %in0, %out : f32", "%r"],
                   init=m.filled((rows,), "%cst"))
    out = m.generic([(ex, shape, [0, 1]), (sm, (rows,), [0])], shape, [0, 1], 2, ["parallel"] * 2,
                    ["%r = arith.divf %in0, %in1 : f32", "%r"])
    m.flops += 5 * rows * cols
    return out, shape


def op_conv(m: Module, x: str, shape: tuple, f: int, k: int, stride: int) -> tuple[str, tuple]:
    b, h, w, c = shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    filt = m.arg((k, k, c, f))
    out = (b, oh, ow, f)
    acc = m.filled(out, "%cst")
    v = m.val()
    m.emit(f"{v} = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : "
           f"tensor<2xi64>}} ins({x}, {filt} : {_t(shape)}, {_t((k, k, c, f))}) outs({acc} : {_t(out)}) -> {_t(out)}")
    m.flops += 2 * b * oh * ow * f * k * k * c
    return v, out


def op_pool(m: Module, x: str, shape: tuple, k: int, stride: int) -> tuple[str, tuple]:
    b, h, w, c = shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    out = (b, oh, ow, c)
    acc = m.filled(out, "%cst_ninf")
    win = m.empty((k, k))
    v = m.val()
    m.emit(f"{v} = linalg.pooling_nhwc_max {{dilations = dense<1> : vector<2xi64>, strides = dense<{stride}> : "
           f"vector<2xi64>}} ins({x}, {win} : {_t(shape)}, {_t((k, k))}) outs({acc} : {_t(out)}) -> {_t(out)}")
    m.flops += b * oh * ow * c * k * k
    return v, out
