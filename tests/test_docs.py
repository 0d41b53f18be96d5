"""The user documentation works on a fresh clone: every link in README.md and docs/*.md points at a file of the
repository (and a heading of it, when it names one), and every fenced shell command names a program and a
subcommand that exist, with options the command has."""

from __future__ import annotations

import argparse
import os
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


def _parser_of(words: list[str]) -> argparse.ArgumentParser | None:
    """The parser of `command [subcommand]` named by the first words (None: not a command)."""
    if not words or words[0] not in COMMANDS:
        return None
    parser = build_parser(words[0])
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            parser = action.choices[words[0]]
            break
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and len(words) > 1 and words[1] in action.choices:
            return action.choices[words[1]]
    return parser


def _command_words(code: str) -> list[str]:
    words = code.split()
    if words and words[0] == "mlir-rl-tui":
        words = words[1:]
    return [w for w in words[:2] if re.fullmatch(r"[a-z][a-z-]*", w)]


#: `--opt ARG` ... default X in one stretch of a cell of a command table (no other option between them)
DOCUMENTED_DEFAULT = re.compile(r"`(--?[a-z][a-z-]*)(?: [^`]*)?`(?:(?!`--?[a-z]).)*?\bdefault:? (`?)([\w./-]+(?:,[\w./-]+)*)`?")
#: an option table's cell: default X, or `VALUE` (default) among the option's choices
CELL_DEFAULT = re.compile(r"\bdefault:? (`?)([\w./-]+(?:,[\w./-]+)*)`?|`([\w.-]+)` \(default\)")


def documented_defaults(page: pathlib.Path) -> list[tuple[list[list[str]], str, str, bool, int]]:
    """(the commands it may be about, option, documented default, whether it is written as code, line) of every
    table row of a page that states an option's default: tables whose first column names a command, "`CMD`
    option" tables, and "option" tables under fenced commands (those since the last heading)."""
    out, cmds, header, in_fence = [], [], None, False
    for n, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            m = re.search(r"mlir-rl-tui ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", line)
            if m and m.group(1).split()[0] in COMMANDS:
                cmds.append(_command_words(m.group(1)))
            continue
        if line.startswith("#"):
            cmds = []
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if header is None:
            header = cells[0]
            continue
        if set(cells[0]) <= set("-: "):
            continue
        if header == "command":
            m = re.match(r"`([^`]*)`", cells[0])
            row_cmd = _command_words(m.group(1)) if m else []
            if row_cmd and row_cmd[0] in COMMANDS:
                for d in DOCUMENTED_DEFAULT.finditer(" | ".join(cells)):
                    out.append(([row_cmd], d.group(1), d.group(3), bool(d.group(2)), n))
            continue
        if re.fullmatch(r"`[a-z-]+(?: [a-z-]+)?` option", header):
            about = [_command_words(header.split("`")[1])]
        elif header == "option":
            about = cmds
        else:
            continue
        if not about or not cells[0].startswith("`-") or len(cells) < 2:
            continue
        option = cells[0].strip("`").split()[0]
        d = CELL_DEFAULT.search(cells[1])
        if d:
            out.append((about, option, d.group(2) or d.group(3), bool(d.group(1)), n))  # `V` (default): a choice
    return out


def _same(documented: str, default: object) -> bool:
    if isinstance(default, (list, tuple)):
        default = " ".join(map(str, default))
    if isinstance(default, bool) or default is None:
        return False
    if isinstance(default, (int, float)):
        try:
            return float(documented) == float(default)
        except ValueError:
            return False
    return documented == str(default) or documented == os.path.basename(str(default))


def _literal(value: str, as_code: bool, action: argparse.Action) -> bool:
    """Whether a documented default is a value (a number, code, one of the choices), not prose or a
    placeholder ("the shipped one", NAME)."""
    if value.isupper():
        return False
    return as_code or re.fullmatch(r"[0-9.]+", value) is not None or value in (action.choices or ())


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_documented_default_is_the_commands(page):
    """A default a page states for an option is the one argparse has."""
    bad = []
    for about, option, value, as_code, line in documented_defaults(page):
        found = [(words, a) for words in about if (parser := _parser_of(words)) is not None
                 for a in parser._actions if option in a.option_strings]
        if not found:
            bad.append(f"line {line}: {' or '.join(' '.join(w) for w in about)} has no option {option}")
            continue
        words, action = found[0]
        if _literal(value, as_code, action) and not _same(value, action.default):
            bad.append(f"line {line}: {' '.join(words)} {option}: documented default {value}, "
                       f"the command's {action.default!r}")
    assert not bad, f"{page.name}: " + "; ".join(bad)


def test_every_help_text_states_its_own_default():
    """`--help` says "(default N)" only where N is the option's default (an option whose default comes from
    the mode that runs, `train`'s, is checked by its own test)."""
    bad = []
    for name in COMMANDS:
        parser = _parser_of([name])
        parsers = [parser]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
        for p in parsers:
            for action in p._actions:
                if action.default == argparse.SUPPRESS or not action.help:
                    continue
                m = re.search(r"\(default:? (`?)([\w./-]+(?:,[\w./-]+)*)`?[),;:]", action.help)
                if m and _literal(m.group(2), bool(m.group(1)), action) and not _same(m.group(2), action.default):
                    bad.append(f"{p.prog} {action.option_strings}: help says default {m.group(2)}, "
                               f"the parser has {action.default!r}")
    assert not bad, "; ".join(bad)
