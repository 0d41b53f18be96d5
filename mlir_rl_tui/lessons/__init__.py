"""Guided lessons: a small TOML file of steps on a sample, each a schedule to apply and measure live.

Format (a teacher writes their own; `mlir-rl-tui lesson FILE.toml` runs it):

```toml
title = "Matrix multiplication, from the naive nest to the machine's peak"
program = "matmul"            # a shipped sample's name, or a .mlir path relative to this file
summary = "One paragraph shown before the first step."

[[step]]
title = "The naive loop nest"
schedule = ""                 # the whole schedule after this step (text notation); "" = untransformed
look = "loops"                # the view to open: original | transformed | diff | loops | script
text = '''What the step does and why it is faster (cache reuse, registers, vector lanes, cores, fusion).'''
faster = 1.0                  # optional: at least this many times faster than the previous step
```

Each step gives the whole schedule, so going back and forth is free and a student who leaves the lesson
to try their own step comes back to the lesson's schedule. `faster` is what the lesson promises; the app
shows the measured gain beside it (yellow when short), the Pilot tests check every shipped lesson's steps
apply, validate and speed up (measured live, on this machine), and benchmarks/lessons.py measures each
promise with its spread.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field

from mlir_rl_tui.engine.errors import EngineError
from mlir_rl_tui.engine.schedule.notation import parse

HERE = os.path.dirname(os.path.abspath(__file__))
VIEWS = ("original", "transformed", "diff", "loops", "script")
MAX_BYTES = 256 << 10


@dataclass(frozen=True)
class Step:
    title: str
    schedule: str
    text: str
    look: str = "transformed"
    faster: float | None = None


@dataclass(frozen=True)
class Lesson:
    name: str
    title: str
    program: str  # path of the .mlir file
    summary: str
    steps: list[Step] = field(default_factory=list)


def shipped() -> list[str]:
    """Names of the lessons that ship with the package, in teaching order."""
    return [n[:-5] for n in sorted(os.listdir(HERE)) if n.endswith(".toml")]


def find(name_or_path: str) -> str:
    """A shipped lesson's file by name (`matmul`, or `1-matmul`), or the given file."""
    if os.path.exists(name_or_path):
        return name_or_path
    for n in shipped():
        if name_or_path in (n, n.split("-", 1)[-1]):
            return os.path.join(HERE, n + ".toml")
    raise EngineError(f"no lesson {name_or_path!r}; shipped: {', '.join(shipped())} (or give a .toml file)")


def load(name_or_path: str) -> Lesson:
    """Read and check a lesson; every problem is one line naming the file and the step."""
    path = find(name_or_path)
    try:
        if os.path.getsize(path) > MAX_BYTES:
            raise EngineError(f"{path}: {os.path.getsize(path)} bytes, more than a lesson's {MAX_BYTES}")
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as e:
        raise EngineError(f"{path}: cannot read the lesson ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise EngineError(f"{path}: not a lesson (TOML: {e})") from None
    except UnicodeDecodeError:
        raise EngineError(f"{path}: not a lesson (not UTF-8 text; a lesson is a TOML file)") from None
    for key in ("title", "program", "step"):
        if key not in data:
            raise EngineError(f"{path}: missing `{key}`")
    prog = str(data["program"])
    if not prog.endswith(".mlir"):
        from mlir_rl_tui.engine.corpus.samples import NoSample, sample_path

        try:
            prog_path = sample_path(prog)
        except NoSample as e:
            raise EngineError(f"{path}: {e}") from None
    else:
        prog_path = os.path.join(os.path.dirname(os.path.abspath(path)), prog)
    steps = []
    for i, s in enumerate(data["step"]):
        where = f"{path}: step {i + 1}"
        if not isinstance(s, dict) or "title" not in s or "text" not in s or "schedule" not in s:
            raise EngineError(f"{where}: needs `title`, `schedule` and `text`")
        try:
            parse(str(s["schedule"]))
        except EngineError as e:
            raise EngineError(f"{where}: {e}") from None
        look = str(s.get("look", "transformed"))
        if look not in VIEWS:
            raise EngineError(f"{where}: look = {look!r}, expected one of {', '.join(VIEWS)}")
        faster = s.get("faster")
        if faster is not None and not isinstance(faster, (int, float)):
            raise EngineError(f"{where}: faster must be a number")
        steps.append(Step(str(s["title"]), str(s["schedule"]), reflow(str(s["text"])), look,
                          float(faster) if faster is not None else None))
    if not steps:
        raise EngineError(f"{path}: a lesson needs at least one step")
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.schedule.state import check_schedule

    program = load_file(prog_path)
    for i, st in enumerate(steps):
        try:
            check_schedule(program, parse(st.schedule))
        except EngineError as e:
            raise EngineError(f"{path}: step {i + 1}: {e}") from None
    name = os.path.splitext(os.path.basename(path))[0]
    return Lesson(name, str(data["title"]), prog_path, reflow(str(data.get("summary", ""))), steps)


def reflow(text: str) -> str:
    """Paragraphs of the TOML text as single lines (the panel wraps them to its width)."""
    paras = [" ".join(p.split()) for p in text.strip().split("\n\n")]
    return "\n\n".join(p for p in paras if p)
