"""A scheduled program as a shared library a user can call: `mlir-rl-tui build FILE --schedule S -o K.so`.

The worker transforms, lowers and JIT-compiles the program exactly as for a measurement (same script,
same pipeline, O3, host CPU) and writes the object code (`ExecutionEngine.dump_to_object_file`); the
system C compiler links it into a shared library with the runtime it needs (the OpenMP runtime the engine
uses for TP/TF, MLIR's C runner utils), found the same way the engine finds them and recorded as rpaths.
A JSON file beside the library (`K.so.json`) describes the entry point: the C-interface symbol, argument
and result shapes and element types, the schedule and the program's sha256. `mlir_rl_tui.runtime.load`
reads both and returns a Python callable.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable

from mlir_rl_tui.engine.engine import Engine
from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.ir.program import Program
from mlir_rl_tui.engine.run.compile import mlir_lib_dir, parallel_runtime
from mlir_rl_tui.engine.schedule.notation import Schedule, to_text
from mlir_rl_tui.engine.schedule.state import check_schedule
from mlir_rl_tui.engine.store.atomic import file_sha256


def c_compiler() -> str:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return shutil.which(cc)
    raise EngineError("building a shared library needs a C compiler to link it (cc, gcc or clang on PATH, or $CC)")


def build_library(engine: Engine, program: Program, schedule: Schedule, out: str, extra: dict | None = None,
                  check: Callable[[str], str | None] | None = None) -> dict:
    """Compile `schedule` of `program` into the shared library `out` (+ `out.json`, with `extra`'s fields: what
    `tune` says of the model); returns the description. `check(library)`, given the library before it takes
    `out`'s place, returns None (or "") or the problem, which fails the build (EngineError) and leaves `out`
    as it was."""
    check_schedule(program, schedule, engine.limits, engine.openmp)  # one-line ScheduleError before any work
    # both files are made beside their final names (through a link: beside its target) and renamed over them
    # at the end: a build that fails leaves the files that were there as they were
    lib_file, desc_file = (os.path.realpath(p) if os.path.islink(p) else p for p in (out, out + ".json"))
    folder, name = os.path.split(lib_file)
    part = os.path.join(folder, f".{name}.{os.getpid()}.tmp")  # with part + ".json": a library runtime.load reads
    try:
        desc = _build(engine, program, schedule, out, part, part + ".json", extra)
        problem = check(part) if check is not None else ""
        if problem:
            raise EngineError(f"{out}: {problem}")
        os.replace(part, lib_file)
        os.replace(part + ".json", desc_file)
    finally:
        for path in (part, part + ".json"):
            with contextlib.suppress(OSError):
                os.remove(path)
    return desc


#: The library's C entry point (`_entry_source`): the arguments' data pointers in, the result's out.
ENTRY = "mlir_rl_tui_run"
#: The library's free of a result (engine/run/kernel_alloc.c: the block is kept for the next call).
FREE = "mlir_rl_tui_free"
#: GNU OpenMP beside the OpenMP shim (engine/run/kmpc_gomp.c): the name PyTorch's CPU build loads it by too.
GOMP = "libgomp.so.1"


def _entry_source(program: Program) -> str:
    """C source of `void mlir_rl_tui_run(void *const *args, void **result)`: `args[i]` the data of the i-th
    argument (contiguous, of its shape), `result[0]` and `result[1]` the allocated and aligned pointers of
    the result the kernel allocated. The memref descriptors are built here, not in Python, so a call from
    Python is one foreign call of two pointers."""
    lines = ["#include <stdint.h>"]

    def desc(rank: int) -> str:
        body = "void *allocated, *aligned; int64_t offset;"
        if rank:
            body += f" int64_t sizes[{rank}], strides[{rank}];"
        return f"struct {{ {body} }}"

    specs = [*program.args, program.results[0]]
    ranks = sorted({len(t.shape) for t in specs})
    for r in ranks:
        lines.append(f"typedef {desc(r)} memref{r};")
    params = ", ".join([f"memref{len(program.results[0].shape)} *"] + [f"memref{len(a.shape)} *" for a in program.args])
    lines.append(f"extern void _mlir_ciface_{program.func_name}({params});")
    lines.append(f"void {ENTRY}(void *const *args, void **result) {{")
    for i, a in enumerate(program.args):
        shape = list(a.shape)
        strides, acc = [], 1
        for n in reversed(shape):
            strides.append(acc)
            acc *= n
        strides.reverse()
        init = f"args[{i}], args[{i}], 0"
        if shape:
            init += ", {" + ", ".join(map(str, shape)) + "}, {" + ", ".join(map(str, strides)) + "}"
        lines.append(f"  memref{len(shape)} a{i} = {{{init}}};")
    lines.append(f"  memref{len(program.results[0].shape)} r;")
    call_args = ", ".join(["&r"] + [f"&a{i}" for i in range(len(program.args))])
    lines.append(f"  _mlir_ciface_{program.func_name}({call_args});")
    lines.append("  result[0] = r.allocated;")
    lines.append("  result[1] = r.aligned;")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _build(engine: Engine, program: Program, schedule: Schedule, out: str, lib_file: str, desc_file: str,
           extra: dict | None) -> dict:
    """build_library's work: the library at `lib_file` and its description at `desc_file` (`out` names them in
    errors). A parallel schedule's OpenMP calls go to GNU OpenMP through engine/run/kmpc_gomp.c (see there: in a
    PyTorch process the library's parallel regions run on PyTorch's own threads)."""
    text = to_text(schedule)
    cc = c_compiler()
    with tempfile.TemporaryDirectory(prefix="mlir-rl-build-") as tmp:
        obj = os.path.join(tmp, "kernel.o")
        _, parallel = engine.worker_job(program, schedule, "compiling the schedule", mode="object", object_path=obj)
        entry = os.path.join(tmp, "entry.c")
        with open(entry, "w") as f:
            f.write(_entry_source(program))
        here = os.path.dirname(os.path.abspath(__file__))
        sources = [entry, os.path.join(here, "kernel_alloc.c")]  # the kernel's buffers, kept between calls
        libs = [os.path.join(mlir_lib_dir(), "libmlir_c_runner_utils.so")]
        runtime = "serial"
        link_flags = ["-Wl,--wrap=malloc,--wrap=free"]
        if parallel:
            kind, lib = parallel_runtime()
            if kind == "openmp":
                sources.append(os.path.join(here, "kmpc_gomp.c"))
                link_flags.append(f"-l:{GOMP}")
                runtime = "gomp"
            else:
                libs.append(lib)
                runtime = kind
        cmd = [cc, "-shared", "-fPIC", "-O2", "-o", lib_file, obj, *sources]
        for lib in libs:
            cmd += [lib, f"-Wl,-rpath,{os.path.dirname(os.path.abspath(lib))}"]
        cmd += link_flags
        try:
            link = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise EngineError(f"linking {out} failed: {e}") from None
        if link.returncode != 0:
            first = next((ln for ln in link.stderr.strip().splitlines() if "error" in ln.lower()),
                         (link.stderr.strip().splitlines() or ["?"])[0])
            raise EngineError(f"linking {out} failed: {first}")
    desc = {
        "format": "mlir-rl-tui kernel 1", "symbol": f"_mlir_ciface_{program.func_name}", "entry": ENTRY,
        "free": FREE,
        "func": program.func_name, "args": [[list(a.shape), a.dtype] for a in program.args],
        "result": [list(program.results[0].shape), program.results[0].dtype], "schedule": text,
        "program_sha256": program.sha256, "runtime": runtime,
        "libraries": libs + ([GOMP] if runtime == "gomp" else []), **(extra or {}),
        "library_sha256": file_sha256(lib_file),  # the loader refuses a description beside another library
    }
    with open(desc_file, "w") as f:
        json.dump(desc, f, indent=1)
    return desc
