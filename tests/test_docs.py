"""The user documentation works on a fresh clone: every link in README.md and docs/*.md points at a file of the
repository (and a heading of it, when it names one), and every fenced shell command names a program and a
subcommand that exist, with options the command has."""

from __future__ import annotations

import argparse
import pathlib
import re
import shlex

import pytest

from mlir_rl_tui.commands import COMMANDS, app_parser, build_parser
from mlir_rl_tui.engine.corpus.samples import names as sample_names

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
#: what a user does not have: the project's private notes, papers and experiment folders
PRIVATE = ("../shared", "shared/", "papers/", "reference/", "runs/")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: pathlib.Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_points_at_a_file_of_the_repository(page):
    bad = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        if any(p in target for p in PRIVATE):
            bad.append(f"{target}: not in the repository")
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no such heading")
    assert not bad, f"{page.name}: " + "; ".join(bad)


def commands(page: pathlib.Path) -> list[list[str]]:
    """The shell commands of a page's bash (or unmarked) fences, one token list per simple command. A line of
    a bash fence the shell could not read fails; an unmarked fence may show output, whose lines are skipped."""
    out = []
    for lang, body in FENCE.findall(page.read_text()):
        if lang not in ("bash", "sh", "shell", ""):
            continue
        for line in body.replace("\\\n", " ").splitlines():  # a command continued over lines is one line
            lex = shlex.shlex(line.strip().removeprefix("$ "), posix=True, punctuation_chars=";&|")
            lex.whitespace_split = True  # words as the shell splits them; quotes kept whole; # starts a comment
            try:
                words = list(lex)
            except ValueError as e:
                if lang:
                    raise ValueError(f"{page.name}: a command the shell cannot read ({e}): {line!r}") from None
                continue
            for tokens in _simple_commands(words):
                while tokens and re.match(r"^[A-Z_]+=", tokens[0]):  # VAR=value before the program
                    tokens = tokens[1:]
                if tokens and tokens[0] == "env":
                    tokens = [t for t in tokens[1:] if not re.match(r"^[A-Z_]+=", t)]
                if tokens:
                    out.append(tokens)
    return out


def _simple_commands(words: list[str]) -> list[list[str]]:
    """The words between the shell's operators (;, &&, ||, |, &)."""
    out: list[list[str]] = [[]]
    for w in words:
        if w and set(w) <= set(";&|"):
            out.append([])
        else:
            out[-1].append(w)
    return out


def _options(parser: argparse.ArgumentParser, words: list[str]) -> set[str]:
    """The option strings of the (sub)command the words name (`dataset export`: dataset's and export's)."""
    known: set[str] = set()
    for action in parser._actions:
        known |= set(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for i, w in enumerate(words):
                if w in action.choices:
                    return known | _options(action.choices[w], words[i + 1:])
    return known


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_names_a_program_and_subcommand_that_exist(page):
    bad = []
    for tokens in commands(page):
        prog, rest = tokens[0], tokens[1:]
        if prog.endswith("mlir-rl-tui"):
            if not rest or rest[0].startswith("-"):
                continue
            first = rest[0]
            if first not in COMMANDS and first not in sample_names() and not (ROOT / first).exists() \
                    and not first.endswith(".mlir"):
                bad.append(" ".join(tokens))
            parser = build_parser(first) if first in COMMANDS else app_parser()
            known = _options(parser, rest)
            bad += [f"{' '.join(tokens)} ({w.split('=')[0]})" for w in rest
                    if w.startswith("--") and w.split("=")[0] not in known]
        elif prog.endswith("python") and rest[:1] != ["-m"] and rest and rest[0].endswith(".py"):
            if not (ROOT / rest[0]).exists():
                bad.append(" ".join(tokens))
        elif prog == "bash" and rest and not rest[0].startswith("-") and not (ROOT / rest[0]).exists():
            bad.append(" ".join(tokens))
    assert not bad, f"{page.name}: commands whose program, subcommand or option does not exist: {bad}"


def test_the_readme_stays_an_overview():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 350
