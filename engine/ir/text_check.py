"""Cheap checks of MLIR text before MLIR's parser sees it: cut-off files and pathological nesting.

The parser in the pip wheels has LLVM assertions on and recurses once per nesting level, so a file cut
inside a `dense_resource` blob or a region aborts the process (SIGABRT, "shouldn't advance past EOF"),
and 4,000 nested regions overflow its stack (SIGSEGV; 2,000 parse fine with an 8 MB stack). These checks
turn the common cases into one-line errors; `engine.ir.loader` still runs the parser in a guarded process
for everything they miss.
"""

from __future__ import annotations

import re

#: Brackets ({[( together) a program may nest. torch-mlir exports and hand-written kernels stay under 20.
MAX_NESTING = 512

# a string literal, a comment, an unterminated string (to the end of its line or of the file), a bracket
_TOKENS = re.compile(r'(?P<string>"[^"\\\n]*(?:\\.[^"\\\n]*)*")|//[^\n]*|(?P<open_string>")|(?P<bracket>[{}\[\]()])')
_CLOSE = "}])"


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def check_text(text: str, name: str) -> str | None:
    """One line naming what is wrong with the text's strings and brackets, or None when they look fine.

    Mismatched or stray brackets are left to the parser (it reports them cleanly); what it cannot
    survive is running out of input inside a construct, or nesting deeper than its stack."""
    stack: list[int] = []  # positions of the open brackets
    for m in _TOKENS.finditer(text):
        if m.lastgroup == "open_string":
            return (f"{name}: not valid MLIR: line {_line(text, m.start())}: a string literal is not closed; the "
                    "file looks truncated")
        if m.lastgroup != "bracket":
            continue
        c = m.group()
        if c in _CLOSE:
            if stack:
                stack.pop()
            continue
        stack.append(m.start())
        if len(stack) > MAX_NESTING:
            return (f"{name}: not valid MLIR: line {_line(text, m.start())}: nested more than {MAX_NESTING} "
                    "levels deep (regions, attributes or brackets); MLIR's parser would overflow its stack")
    if stack:
        n = len(stack)
        return (f"{name}: not valid MLIR: the file ends inside {n} unclosed bracket{'s' if n > 1 else ''} (the "
                f"innermost opened at line {_line(text, stack[-1])}); the file looks truncated")
    return None
