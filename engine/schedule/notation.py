"""Schedules as plain data, and their text notation (docs/schedules.md).

`op0: TP(64,64,0) T(8,32,1) V; op1: TF(32,64) NT` - one op per `;`, tile sizes in the op's current
loop order, `I(2,0,1)` a permutation (new position i holds old loop a_i, as in the paper).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlir_rl_tui.engine.errors import ScheduleError

TILED = ("T", "TP", "TF")
_ACTION = re.compile(r"\s*(TP|TF|T|I)\s*\(\s*([^()]*)\)\s*|\s*(V|NT)\b\s*")
_OP = re.compile(r"^\s*(op\d+)\s*:(.*)$", re.S)


@dataclass(frozen=True)
class Action:
    """One transformation and its parameters (tile sizes or a permutation)."""

    kind: str  # T, TP, TF, I, V, NT
    params: tuple[int, ...] = ()

    def __str__(self) -> str:
        if self.kind in ("V", "NT"):
            return self.kind
        return f"{self.kind}({','.join(str(p) for p in self.params)})"

    @property
    def terminal(self) -> bool:
        """V and NT end the optimization of the current op (paper Sec. IV-A, App. A)."""
        return self.kind in ("V", "NT")


@dataclass
class Schedule:
    """For each op id, the ordered list of actions applied to it."""

    ops: dict[str, list[Action]] = field(default_factory=dict)

    def actions(self, op_id: str) -> list[Action]:
        return self.ops.get(op_id, [])

    def with_action(self, op_id: str, action: Action) -> Schedule:
        new = {k: list(v) for k, v in self.ops.items()}
        new.setdefault(op_id, []).append(action)
        return Schedule(new)

    def without_last(self, op_id: str) -> Schedule:
        new = {k: list(v) for k, v in self.ops.items()}
        if new.get(op_id):
            new[op_id].pop()
        return Schedule({k: v for k, v in new.items() if v})

    def __len__(self) -> int:
        return sum(len(v) for v in self.ops.values())

    def __str__(self) -> str:
        return to_text(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schedule) and to_text(self) == to_text(other)

    def __hash__(self) -> int:
        return hash(to_text(self))


def _op_number(op_id: str) -> int:
    return int(op_id[2:]) if op_id[2:].isdigit() else 1 << 30


def to_text(schedule: Schedule) -> str:
    """Canonical text: ops in id order, ops without actions left out ("" = untransformed)."""
    parts = []
    for op_id in sorted(schedule.ops, key=_op_number):
        acts = schedule.ops[op_id]
        if acts:
            parts.append(f"{op_id}: " + " ".join(str(a) for a in acts))
    return "; ".join(parts)


def parse_action(text: str) -> Action:
    m = _ACTION.fullmatch(text)
    if not m:
        raise ScheduleError(f"malformed action {_clip(text)!r}; expected T(..), TP(..), TF(..), I(..), V or NT")
    return _to_action(m, text)


def _to_action(m: re.Match, text: str) -> Action:
    if m.group(3):
        return Action(m.group(3))
    kind, body = m.group(1), m.group(2).strip()
    if not body:
        raise ScheduleError(f"{kind}() needs parameters in {_clip(text)!r}")
    try:
        params = tuple(int(x) for x in body.split(","))
    except ValueError:
        raise ScheduleError(f"parameters of {kind} must be integers in {_clip(text)!r}") from None
    return Action(kind, params)


MAX_SCHEDULE_CHARS = 1 << 18  # longest schedule text parsed (a 600-op model's schedule is ~50 KB)


def _clip(text: str, n: int = 80) -> str:
    """`text` as an error quotes it: at most `n` characters."""
    text = text.strip()
    return text if len(text) <= n else text[:n] + "..."


def parse(text: str) -> Schedule:
    """Parse schedule text; raises ScheduleError with the offending part (clipped) on malformed input."""
    ops: dict[str, list[Action]] = {}
    if not text or not text.strip():
        return Schedule({})
    if len(text) > MAX_SCHEDULE_CHARS:
        raise ScheduleError(f"a schedule of {len(text)} characters is longer than a schedule can be "
                            f"({MAX_SCHEDULE_CHARS} characters)")
    for part in text.split(";"):
        if not part.strip():
            continue
        m = _OP.match(part)
        if not m:
            raise ScheduleError(f"malformed schedule part {_clip(part)!r}; expected 'opN: ACTION ...'")
        op_id, body = m.group(1), m.group(2)
        if op_id in ops:
            raise ScheduleError(f"{op_id} appears twice in the schedule")
        acts: list[Action] = []
        pos = 0
        body = body.rstrip()
        while pos < len(body):
            am = _ACTION.match(body, pos)
            if not am or am.end() == pos:
                raise ScheduleError(f"malformed action in {op_id} at {_clip(body[pos:])!r}; "
                                    "expected T(..), TP(..), TF(..), I(..), V or NT")
            acts.append(_to_action(am, am.group(0)))
            pos = am.end()
        ops[op_id] = acts
    return Schedule(ops)
