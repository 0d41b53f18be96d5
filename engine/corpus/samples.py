"""The sample programs that ship with the product, found by name from anywhere (`mlir-rl-tui matmul`).

They are the repository's `samples/` folder, installed as `mlir_rl_tui/sample_programs` (pyproject's
package-dir) beside the installed engine, as `samples/` is beside `engine/` in a checkout. `program` is the one rule for a program argument of every command and the app: an existing
file is that file, else a sample's name is that sample. Nothing heavy is imported here (no MLIR), so
`mlir-rl-tui samples` answers at once.
"""

from __future__ import annotations

import os

_TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: the folder two levels above this one's: installed (the wheel), mlir_rl_tui/ holding sample_programs/; in a
#: checkout (an editable install runs from the repository), the repository holding samples/
_PLACES = (os.path.join(_TOP, "sample_programs"), os.path.join(_TOP, "samples"))
#: the argument that names every sample at once (`train --programs samples`), as in a checkout
ALL = "samples"


class NoSample(LookupError):
    """A name that is neither a file nor a shipped sample."""


def samples_dir() -> str:
    """The folder of the shipped samples: inside the installed package, or the checkout's samples/."""
    for d in _PLACES:
        if os.path.isdir(d):
            return d
    raise NoSample("the sample programs are missing from this installation")


def names() -> list[str]:
    """The samples' names (file names without .mlir), sorted."""
    return sorted(n[:-5] for n in os.listdir(samples_dir()) if n.endswith(".mlir"))


def find(name: str) -> str | None:
    """The file of the sample called `name` (`matmul` or `matmul.mlir`), or None."""
    if not name or os.sep in name or (os.altsep and os.altsep in name) or name.startswith("."):
        return None
    try:
        path = os.path.join(samples_dir(), name if name.endswith(".mlir") else name + ".mlir")
    except NoSample:
        return None
    return path if os.path.isfile(path) else None


def sample_path(name: str) -> str:
    """The file of the sample called `name`; NoSample (one line naming the samples) if there is none."""
    path = find(name)
    if path is None:
        raise NoSample(f"no sample {name!r}; samples: {', '.join(names())}")
    return path


def program(arg: str) -> str:
    """What a program argument names: an existing file or folder is itself; otherwise a sample's name
    (`matmul`, `matmul.mlir`) is that sample's file and `samples` their folder; anything else is returned
    as it is, for the loader to say what is wrong with it."""
    if os.path.exists(arg):
        return arg
    if arg in (ALL, ALL + os.sep):
        return samples_dir()
    return find(arg) or arg


def looks_like_name(arg: str) -> bool:
    """A bare name (no folder part), which may have meant a sample."""
    return bool(arg) and os.path.dirname(arg) == ""


def describe(name: str) -> str:
    """The sample's first comment line (what it computes)."""
    with open(sample_path(name)) as f:
        first = f.readline().strip()
    return first[2:].strip() if first.startswith("//") else ""
