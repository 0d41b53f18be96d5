"""`mlir-rl-tui build`: the scheduled program as a shared library, called from Python through the runtime."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import SAMPLES


def test_built_kernel_gives_numpys_result(tmp_path, cache_dir):
    out = tmp_path / "matmul.so"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(SAMPLES / "matmul.mlir"), "--schedule",
                        "op0: TP(32,32,0) T(8,32,1) V; op1: NT", "-o", str(out), "--json"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    desc = json.loads(r.stdout)
    assert desc["symbol"] == "_mlir_ciface_forward" and desc["args"] == [[[256, 256], "f32"], [[256, 256], "f32"]]
    from mlir_rl_tui import runtime

    k = runtime.load(str(out))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((256, 256), np.float32), rng.standard_normal((256, 256), np.float32)
    for _ in range(3):  # results are independent buffers, freed when dropped
        c = k(a, b)
        assert c.shape == (256, 256) and np.allclose(c, a @ b, rtol=1e-4, atol=1e-3)
    with pytest.raises(runtime.KernelError, match="argument 1 has shape"):
        k(a, b[:128])
    torch = pytest.importorskip("torch")
    t = k(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(t, torch.Tensor) and torch.allclose(t, torch.from_numpy(a) @ torch.from_numpy(b), atol=1e-3)


def test_build_errors_are_one_line(tmp_path, cache_dir):
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(SAMPLES / "matmul.mlir"), "--schedule",
                        "op0: T(7,32,1) V", "-o", str(tmp_path / "x.so")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "does not divide" in r.stderr
    from mlir_rl_tui import runtime

    with pytest.raises(runtime.KernelError, match="cannot read the kernel's description"):
        runtime.load(str(tmp_path / "missing.so"))


def _diamond(rows: int = 256, cols: int = 512) -> str:
    """Three elementwise ops of one input, summed by a fourth: three 512 KiB intermediates live at once."""
    t = f"tensor<{rows}x{cols}xf32>"
    g = '{indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}'
    lines = ["#map = affine_map<(d0, d1) -> (d0, d1)>", f"func.func @forward(%arg0: {t}) -> {t} {{",
             "  %c = arith.constant 1.000000e+00 : f32"]
    for i, op in enumerate(("addf", "mulf", "subf")):
        lines += [f"  %e{i} = tensor.empty() : {t}", f"  %r{i} = linalg.generic {g} ins(%arg0 : {t}) outs(%e{i} : {t}) {{",
                  "  ^bb0(%in: f32, %out: f32):", f"    %y = arith.{op} %in, %c : f32", "    linalg.yield %y : f32",
                  f"  }} -> {t}"]
    g3 = '{indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]}'
    lines += [f"  %e3 = tensor.empty() : {t}", f"  %r3 = linalg.generic {g3} ins(%r0, %r1, %r2 : {t}, {t}, {t}) outs(%e3 : {t}) {{",
              "  ^bb0(%a: f32, %b: f32, %d: f32, %out: f32):", "    %s = arith.addf %a, %b : f32",
              "    %u = arith.addf %s, %d : f32", "    linalg.yield %u : f32", f"  }} -> {t}", f"  return %r3 : {t}", "}"]
    return "\n".join(lines) + "\n"


#: Counts the process's malloc calls of 64 KiB or more (LD_PRELOAD): what the system allocator was asked for.
_COUNT_MALLOC = r"""
#include <stddef.h>
extern void *__libc_malloc(size_t);
long big_mallocs;
void *malloc(size_t n) { if (n >= 65536) big_mallocs++; return __libc_malloc(n); }
"""


def test_a_librarys_buffers_are_kept_between_calls(tmp_path, cache_dir):
    """After its first call, a library asks the system allocator for none of its large buffers again (the
    three intermediates and the result are kept by engine/run/kernel_alloc.c and reused): glibc gave such buffers
    back to the system after a call when they sat at its heap's top, and the next call faulted every page in
    again (a ConvNeXt block in a Python process: 580 page faults a call, four times slower)."""
    src = tmp_path / "diamond.mlir"
    src.write_text(_diamond())
    lib = tmp_path / "diamond.so"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(src), "--schedule",
                        "op0: NT; op1: NT; op2: NT; op3: NT", "-o", str(lib), "--json"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    (tmp_path / "count.c").write_text(_COUNT_MALLOC)
    counter = tmp_path / "count.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(counter), str(tmp_path / "count.c")], check=True)
    probe = (f"import ctypes, numpy as np; from mlir_rl_tui import runtime; k = runtime.load({str(lib)!r}); "
             "n = ctypes.c_long.in_dll(ctypes.CDLL(None), 'big_mallocs'); "
             "x = np.random.default_rng(0).standard_normal((256, 512), np.float32); "
             "assert np.allclose(k(x), 3 * x, atol=1e-5); k(x); before = n.value\n"
             "for _ in range(20): y = k(x); del y\n"
             "print(before, n.value - before)")
    import os

    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "LD_PRELOAD": str(counter)})
    assert got.returncode == 0, got.stderr
    before, after = map(int, got.stdout.split())
    assert before >= 4 and after == 0, got.stdout  # the first calls did allocate (the counter works)


def test_a_parallel_kernel_splits_its_loops_right_for_any_team(tmp_path, cache_dir):
    """The OpenMP shim (engine/run/kmpc_gomp.c) gives every iteration to exactly one thread whatever the team's
    size: teams of 1, 3 (uneven shares) and 8 (more threads than some loops have iterations)."""
    lib = tmp_path / "mm.so"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(SAMPLES / "matmul.mlir"), "--schedule",
                        "op0: TP(64,128,0) T(8,32,1) V; op1: TP(128,0) T(1,256) V", "-o", str(lib), "--json"],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0 and json.loads(r.stdout)["runtime"] == "gomp", r.stderr
    probe = (f"import numpy as np; from mlir_rl_tui import runtime; k = runtime.load({str(lib)!r}); "
             "rng = np.random.default_rng(2); a, b = (rng.standard_normal((256, 256), np.float32) for _ in 'ab'); "
             "print(float(np.abs(k(a, b) - a @ b).max()))")
    import os

    for threads in ("1", "3", "8"):
        got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "OMP_NUM_THREADS": threads})
        assert got.returncode == 0 and float(got.stdout) < 1e-3, (threads, got.stdout, got.stderr)


def test_a_description_beside_another_library_is_refused_in_one_line(tmp_path, cache_dir):
    """The `.so.json` carries its library's sha256: the matmul library with the add sample's description
    beside it (both built here) is refused before any native call, as are malformed descriptions."""
    from mlir_rl_tui import runtime

    for name, schedule in (("matmul", "op0: T(8,32,1) V; op1: NT"), ("add", "op0: T(4,32) V")):
        r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(SAMPLES / f"{name}.mlir"),
                            "--schedule", schedule, "-o", str(tmp_path / f"{name}.so")],
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr
    desc = json.loads((tmp_path / "matmul.so.json").read_text())
    assert len(desc["library_sha256"]) == 64
    runtime.load(str(tmp_path / "matmul.so"))  # its own description: loads
    (tmp_path / "matmul.so.json").write_text((tmp_path / "add.so.json").read_text())
    with pytest.raises(runtime.KernelError, match="not the library matmul.so.json describes") as e:
        runtime.load(str(tmp_path / "matmul.so"))
    assert "\n" not in str(e.value)
    for broken, match in (({k: v for k, v in desc.items() if k != "library_sha256"}, "names no library"),
                          ({**desc, "args": [[[256, "x"], "f32"]]}, "argument 0 is not a"),
                          ({**desc, "result": None}, "the result is not a"),
                          ({**desc, "symbol": None}, "malformed"),
                          ([1, 2], "not a kernel description")):
        (tmp_path / "matmul.so.json").write_text(json.dumps(broken))
        with pytest.raises(runtime.KernelError, match=match) as e:
            runtime.load(str(tmp_path / "matmul.so"))
        assert "\n" not in str(e.value)


def test_a_mlir_library_is_checked_against_the_untransformed_program(tmp_path, cache_dir):
    """Without PyTorch's reference beside the program, `build` runs the library against the untransformed
    program's output on the same seeded inputs (Engine.reference) and says so."""
    out = tmp_path / "add.so"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(SAMPLES / "add.mlir"), "--schedule",
                        "op0: T(4,32) V", "-o", str(out), "--json"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["checked"] == "engine" and out.exists()


def test_a_library_that_disagrees_with_its_reference_is_not_written(tmp_path, engine, matmul, monkeypatch):
    """The untransformed program's output, doubled on its way to the check (a library computing something
    else): the build fails in one line naming the reference and the file already at OUT is left as it was."""
    from mlir_rl_tui.engine import parse
    from mlir_rl_tui.engine.errors import EngineError
    from mlir_rl_tui.runtime import build_checked

    real = engine.reference

    def doubled(program, path):
        real(program, path)
        with np.load(path) as z:
            output, seed = z["output"], z["seed"]
        np.savez(path, output=2 * output, seed=seed)

    out = tmp_path / "matmul.so"
    out.write_bytes(b"the user's earlier library")
    monkeypatch.setattr(engine, "reference", doubled)
    with pytest.raises(EngineError, match="against the untransformed program's result") as e:
        build_checked(engine, matmul, parse("op0: T(8,32,1) V; op1: NT"), str(out), str(SAMPLES / "matmul.mlir"))
    assert "\n" not in str(e.value)
    assert out.read_bytes() == b"the user's earlier library" and not (tmp_path / "matmul.so.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["matmul.so"]  # nothing half-written beside it
    monkeypatch.setattr(engine, "reference", real)
    desc, checked = build_checked(engine, matmul, parse("op0: T(8,32,1) V; op1: NT"), str(out),
                                  str(SAMPLES / "matmul.mlir"))
    assert checked == "engine" and desc["library_sha256"] and out.read_bytes() != b"the user's earlier library"


def test_an_op_writing_into_an_argument_compiles_and_leaves_the_input_as_it_was(tmp_path, cache_dir):
    """`linalg.matmul ... outs(%c)` with %c an argument (a user's accumulate, or a workload taken out of a
    model whose output was a slice of another op's result): its untransformed program used to fail to
    compile (a `bufferization.clone` left for LLVM). It computes C + A @ B, and the caller's C is unchanged."""
    src = tmp_path / "acc.mlir"
    src.write_text("""func.func @forward(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
""")
    from mlir_rl_tui.engine.run.compile import writes_arguments

    assert writes_arguments(src.read_text()) and not writes_arguments((SAMPLES / "matmul.mlir").read_text())
    for schedule in ("", "op0: T(8,32,1) V"):
        r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "apply", str(src), "--schedule", schedule, "--json"],
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r.stdout + r.stderr
    out = tmp_path / "acc.so"
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "build", str(src), "--schedule", "op0: T(8,32,1) V",
                        "-o", str(out)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    from mlir_rl_tui import runtime

    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((64, 64), np.float32) for _ in range(3))
    c0 = c.copy()
    got = runtime.load(str(out))(a, b, c)
    assert np.allclose(got, c0 + a @ b, rtol=1e-4, atol=1e-3) and np.array_equal(c, c0)
