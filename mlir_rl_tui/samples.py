"""The sample programs that ship with the product: found by name from anywhere (`mlir-rl-tui matmul`)."""

from __future__ import annotations

import os

from engine.errors import EngineError


def samples_dir() -> str:
    """The folder of the shipped samples: inside the installed package, or the checkout's samples/."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.path.join(here, "samples"), os.path.join(os.path.dirname(here), "samples")):
        if os.path.isdir(d):
            return d
    raise EngineError("the sample programs are missing from this installation")


def names() -> list[str]:
    return sorted(n[:-5] for n in os.listdir(samples_dir()) if n.endswith(".mlir"))


def sample_path(name: str) -> str:
    path = os.path.join(samples_dir(), name if name.endswith(".mlir") else name + ".mlir")
    if not os.path.isfile(path):
        raise EngineError(f"no sample {name!r}; samples: {', '.join(names())}")
    return path


def describe(name: str) -> str:
    """The sample's first comment line (what it computes)."""
    with open(sample_path(name)) as f:
        first = f.readline().strip()
    return first[2:].strip() if first.startswith("//") else ""
