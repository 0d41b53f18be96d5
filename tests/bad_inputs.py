"""Bad inputs of every kind issue 11 names, written to files: what each one is, and words its one-line
error must contain. Shared by the engine tests (test_loader.py) and the command-line tests."""

from __future__ import annotations

import os
import pathlib

from conftest import SAMPLES, TORCH

#: Deep enough to overflow the stack of MLIR's recursive parser (it crashed at 4,000 nested regions).
DEPTH = 20_000


def matmul(n: int, name: str = "forward", private: bool = False) -> str:
    t = f"tensor<{n}x{n}xf32>"
    return f"""func.func {'private ' if private else ''}@{name}(%a: {t}, %b: {t}) -> {t} {{
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : {t}
  %f = linalg.fill ins(%cst : f32) outs(%e : {t}) -> {t}
  %m = linalg.matmul ins(%a, %b : {t}, {t}) outs(%f : {t}) -> {t}
  return %m : {t}
}}
"""


def add(n: int, name: str = "forward", private: bool = False) -> str:
    t = f"tensor<{n}x{n}xf32>"
    return f"""func.func {'private ' if private else ''}@{name}(%a: {t}, %b: {t}) -> {t} {{
  %e = tensor.empty() : {t}
  %r = linalg.add ins(%a, %b : {t}, {t}) outs(%e : {t}) -> {t}
  return %r : {t}
}}
"""


def chain(n: int) -> str:
    t = "tensor<64x64xf32>"
    lines = [f"func.func @forward(%a: {t}, %b: {t}) -> {t} {{"]
    prev = "%a"
    for i in range(n):
        lines += [f"  %e{i} = tensor.empty() : {t}",
                  f"  %v{i} = linalg.add ins({prev}, %b : {t}, {t}) outs(%e{i} : {t}) -> {t}"]
        prev = f"%v{i}"
    return "\n".join(lines + [f"  return {prev} : {t}", "}"]) + "\n"


def truncated_in_blob() -> str:
    """A torch-mlir export cut in the middle of a dense_resource blob (hex string)."""
    text = (TORCH / "resnet_block.mlir").read_text()
    start = text.index('"0x', text.index("{-#"))
    return text[:start + 200]


def truncated_in_region() -> str:
    """A torch-mlir export cut inside its `{-# dialect_resources: {...} #-}` region, after a blob's key
    (MLIR's parser aborts: "shouldn't advance past EOF or errors")."""
    text = (TORCH / "resnet_block.mlir").read_text()
    return text[:text.index(":", text.index("torch_tensor", text.index("{-#"))) + 1]


def truncated_in_body() -> str:
    """A torch-mlir export cut inside a linalg.generic's region, in the middle of the function."""
    text = (TORCH / "resnet_block.mlir").read_text()
    return text[:text.index("^bb0", text.index("linalg.generic")) + 30]


def nested_regions(depth: int = DEPTH) -> str:
    return "func.func @f() {\n" + "scf.execute_region {\n" * depth + "scf.yield\n}\n" * depth + "return\n}\n"


def nested_attributes(depth: int = DEPTH) -> str:
    return "func.func @f() attributes {a = " + "[" * depth + "]" * depth + "} {\nreturn\n}\n"


def nested_types(depth: int = 200_000) -> str:
    """Nesting the text checks do not see (angle brackets): the parser itself crashes, the guard reports."""
    return "func.func @f(%a: " + "tuple<" * depth + "f32" + ">" * depth + ") { return }\n"


def multi_public() -> str:
    return matmul(16, "first") + add(16, "second")


def linalg_in_a_loop() -> str:
    """A linalg op inside an scf.while: bufferizing it into the loop fails to compile."""
    return """func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %r = scf.while (%a = %arg0) : (tensor<8xf32>) -> tensor<8xf32> {
    %c0 = arith.constant 0 : index
    %x = tensor.extract %a[%c0] : tensor<8xf32>
    %lim = arith.constant 100.0 : f32
    %cond = arith.cmpf olt, %x, %lim : f32
    scf.condition(%cond) %a : tensor<8xf32>
  } do {
  ^bb0(%b: tensor<8xf32>):
    %e = tensor.empty() : tensor<8xf32>
    %s = linalg.add ins(%b, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
    scf.yield %s : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}
"""


def branch_in_a_body() -> str:
    """A linalg.generic whose body holds an scf.if: the lowering cannot translate it to LLVM."""
    return """#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%a: tensor<8x8xf32>, %o: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x8xf32>) outs(%o : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %c = arith.cmpf ogt, %x, %y : f32
    %s = scf.if %c -> f32 {
      %m = math.exp %x : f32
      scf.yield %m : f32
    } else {
      scf.yield %y : f32
    }
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
"""


def private_helper_first() -> str:
    return add(16, "helper", private=True) + matmul(16, "forward")


#: kind -> (words in the one-line error, commands for which it is an error)
KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "truncated_blob": ("truncated", ("inspect", "apply", "app")),
    "truncated_region": ("truncated", ("inspect", "apply", "app")),
    "truncated_body": ("truncated", ("inspect", "apply", "app")),
    "nested_regions": ("nested more than", ("inspect", "apply", "app")),
    "nested_attributes": ("nested more than", ("inspect", "apply", "app")),
    "nested_types": ("crashed (SIGSEGV", ("inspect", "apply", "app")),
    "binary": ("binary", ("inspect", "apply", "app")),
    "invalid_utf8": ("binary", ("inspect", "apply", "app")),
    "fifo": ("FIFO", ("inspect", "apply", "app")),
    "directory": ("directory", ("inspect", "apply", "app")),
    "multi_public": ("--entry", ("inspect", "apply")),
    "private_helper_first": ("--entry", ("inspect", "apply")),
    "oversized": ("GiB", ("inspect", "apply", "app")),
    "oversized_1gib_add": ("3.0 GiB, more than the 2 GiB", ("inspect", "apply", "app")),
    "too_many_ops": ("1500 linalg ops", ("inspect", "apply", "app")),
    "too_slow": ("limit for measuring", ("apply", "app")),
    "linalg_in_a_loop": ("linalg.add is inside scf.while", ("inspect", "apply", "app")),
    "branch_in_a_body": ("body holds scf.if", ("inspect", "apply", "app")),
}


def write(kind: str, folder: pathlib.Path) -> pathlib.Path:
    """The bad input `kind` as a file (or special file) in `folder`."""
    path = folder / f"{kind}.mlir"
    if path.exists() or path.is_symlink():
        return path
    texts = {
        "truncated_blob": truncated_in_blob, "truncated_region": truncated_in_region,
        "truncated_body": truncated_in_body,
        "nested_regions": nested_regions, "nested_attributes": nested_attributes, "nested_types": nested_types,
        "multi_public": multi_public, "private_helper_first": private_helper_first,
        "linalg_in_a_loop": linalg_in_a_loop, "branch_in_a_body": branch_in_a_body,
        "oversized": lambda: (SAMPLES / "matmul.mlir").read_text().replace("256", "200000"),
        "too_many_ops": lambda: chain(1500), "too_slow": lambda: matmul(4096),
        "oversized_1gib_add": lambda: add(16384),  # two 1 GiB arguments and a 1 GiB result
    }
    if kind in texts:
        path.write_text(texts[kind]())
    elif kind == "binary":
        path.write_bytes((TORCH / "mlp_input.npy").read_bytes())  # a real binary file, NUL bytes included
    elif kind == "invalid_utf8":
        path.write_bytes(b"func.func @f() {\n  return\n}\n// caf\xe9\n")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        raise KeyError(kind)
    return path
