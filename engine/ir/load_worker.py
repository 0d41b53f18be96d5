"""Loader process: parses user MLIR for `engine.ir.loader`, so that MLIR's parser cannot kill the caller.

Started by `engine.ir.loader` (not through `python -m`, see `BOOT` there), it reads requests on stdin and
answers one JSON line each on a private copy of stdout. A request is a JSON header line followed by
`nbytes` bytes of UTF-8 MLIR text:
  {"mode": "load", "name": ..., "entry": ..., "nbytes": n}           -> {"status": "ok", "program": {...}}
  {"mode": "replayable", "func": ..., "script": ..., "nbytes": n}   -> {"status": "ok", "text": ...}
  {"mode": "strip", "nbytes": n}                                    -> {"status": "ok", "text": ...}
  {"mode": "graph", "passes": [...], "nbytes": n}                  -> {"status": "ok", "text": ..., "counts": {...}}
  {"mode": "extract", "func": ..., "groups": [[op ids]], "nbytes": n} -> {"status": "ok", "texts": [...]}
A failure the input explains is {"status": "error", "error": <one line>, "candidates": [...] or null}.
An input that aborts or segfaults the parser kills this process; the caller reports it and starts another.
"""

from __future__ import annotations

import json
import os
import sys


def set_limits() -> None:
    """Address-space limit (a runaway parse fails here, not on the machine) and no core files."""
    import resource

    limit = int(os.environ.get("MLIR_RL_LOADER_MEMORY", "0") or 0)
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def handle(req: dict, text: str) -> dict:
    mode = req.get("mode")
    if mode == "load":
        from mlir_rl_tui.engine.ir.program import describe_text

        prog = describe_text(text, req.get("name") or "<input>", req.get("entry"))
        return {"status": "ok", "program": prog.to_json()}
    if mode == "replayable":
        from mlir_rl_tui.engine.ir.export import replayable_here

        return {"status": "ok", "text": replayable_here(text, req.get("func"), req["script"])}
    if mode == "strip":
        from mlir_rl_tui.engine.ir.export import strip_transforms_here

        return {"status": "ok", "text": strip_transforms_here(text)}
    if mode == "graph":
        from mlir_rl_tui.engine.rewrite.graph import graph_here

        return {"status": "ok", **graph_here(text, tuple(req.get("passes") or ()))}
    if mode == "extract":
        from mlir_rl_tui.engine.ir.extract import extract_here

        return {"status": "ok", "texts": extract_here(text, req["func"], req["groups"])}
    return {"status": "error", "error": f"unknown loader request {mode!r}"}


def answer(req: dict, payload: bytes) -> dict:
    from mlir_rl_tui.engine.errors import EngineError

    name = req.get("name") or "<input>"
    try:
        return handle(req, payload.decode())
    except EngineError as e:
        return {"status": "error", "error": str(e), "candidates": getattr(e, "candidates", None)}
    except MemoryError:
        return {"status": "error", "error": f"{name}: ran out of memory (loader limit "
                                            f"{int(os.environ.get('MLIR_RL_LOADER_MEMORY', '0')) / 2**30:.0f} GiB)"}
    except Exception as e:  # noqa: BLE001 - report, never die on a Python error
        first = str(e).splitlines()[0] if str(e) else ""
        return {"status": "error", "error": f"{name}: {type(e).__name__}: {first}"}


def main() -> None:
    set_limits()
    # the protocol gets a private copy of stdout; fd 1 then points at stderr, so nothing MLIR or LLVM
    # prints can corrupt it
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import mlir.ir  # noqa: F401  (once, before the first request)

    proto.write(json.dumps({"event": "ready", "pid": os.getpid()}) + "\n")
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return  # the caller went away
        if not line.strip():
            continue
        req = json.loads(line)
        payload = stdin.read(int(req.get("nbytes", 0)))
        proto.write(json.dumps(answer(req, payload)) + "\n")


if __name__ == "__main__":
    main()
