"""The command line's shape: one registry, one module per command loaded by name, a light `--help`, the
entry points, and `train --recipe default` (the shipped policy's recipe) parsed and run small."""

from __future__ import annotations

import ast
import json
import math
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest
from conftest import ROOT

from mlir_rl_tui.commands import APP, COMMANDS, load, main

HEAVY = ("torch", "textual", "mlir", "mlir_rl_tui.engine", "mlir_rl_tui.agent", "numpy")


def _under(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_top_level_help_imports_nothing_heavy():
    code = ("import sys\nfrom mlir_rl_tui.commands import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n"
            "    pass\nheavy = sys.argv[1:]\n"
            "print(sorted({h for m in sys.modules for h in heavy if m == h or m.startswith(h + '.')}))")
    r = subprocess.run([sys.executable, "-c", code, *HEAVY], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"


def test_no_commands_help_loads_torch_textual_or_mlir():
    """Every `COMMAND --help` answers without the slow imports (train's is built from torch-free dataclasses)."""
    code = ("import sys\nfrom mlir_rl_tui.commands import COMMANDS, main\nfor name in COMMANDS:\n    try:\n"
            "        main([name, '--help'])\n    except SystemExit:\n        pass\nheavy = sys.argv[1:]\n"
            "print(sorted({h for m in sys.modules for h in heavy if m == h or m.startswith(h + '.')}))")
    r = subprocess.run([sys.executable, "-c", code, "torch", "textual", "mlir"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"


def test_every_command_is_listed_with_its_line_and_its_help_starts_with_it(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    top = " ".join(capsys.readouterr().out.split())
    for name, cmd in COMMANDS.items():
        assert f"{name} {cmd.help}" in top
        with pytest.raises(SystemExit) as e:
            main([name, "--help"])
        assert e.value.code == 0
        out = " ".join(capsys.readouterr().out.split())
        assert out.startswith(f"usage: mlir-rl-tui {name} ")
        assert cmd.help[0].upper() + cmd.help[1:] + "." in out


def test_every_command_module_has_arguments_and_run():
    for cmd in [*COMMANDS.values(), APP]:
        mod = load(cmd)
        assert callable(mod.add_arguments) and callable(mod.run), cmd.module
    files = {p.stem for p in (ROOT / "mlir_rl_tui" / "commands").glob("*.py")} - {"__init__", "common"}
    assert files == {c.module for c in [*COMMANDS.values(), APP]}  # no module outside the registry


def test_no_command_and_an_unknown_option():
    assert main([]) == 2
    with pytest.raises(SystemExit) as e:
        main(["--no-such-option"])
    assert e.value.code == 2


def test_entry_point_and_python_m():
    with open(ROOT / "pyproject.toml", "rb") as f:
        target = tomllib.load(f)["project"]["scripts"]["mlir-rl-tui"]
    module, _, func = target.partition(":")
    assert getattr(__import__(module, fromlist=[func]), func) is main
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "convert-checkpoint" in r.stdout
    script = pathlib.Path(sys.executable).parent / "mlir-rl-tui"
    if script.exists():  # the installed script (scripts/setup)
        r = subprocess.run([str(script), "inspect", "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and r.stdout.startswith("usage: mlir-rl-tui inspect")


def _top_level_imports(path: pathlib.Path) -> set[str]:
    """Modules a file imports when it is imported (not inside functions)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_torch_and_the_agent_only_in_the_agent_backed_commands():
    """The app and the command line import torch only through the agent, and only where a command needs it."""
    for path in (ROOT / "mlir_rl_tui").rglob("*.py"):
        text = path.read_text()
        assert "import torch" not in text and "from torch" not in text, path
        if path.parent.name == "commands" and path.stem not in ("train",):
            heavy = ("mlir_rl_tui.agent", "mlir_rl_tui.engine", "textual", "mlir")
            light = ("mlir_rl_tui.engine.corpus.samples",)  # file names only: `mlir-rl-tui samples` answers at once
            assert not [n for n in _top_level_imports(path) if _under(n, heavy) and n not in light], path


def test_one_gmean():
    defs = [(p, n.name) for p in ROOT.glob("[!.]*/**/*.py") if not {".venv", "build", "dist"} & set(p.parts)
            for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.FunctionDef) and n.name.strip("_") == "gmean"]
    assert [(p.relative_to(ROOT).as_posix(), n) for p, n in defs] == [("agent/evaluate.py", "gmean")]


# -- train: PPO or the recipe, one parser -----------------------------------------------------------------
@pytest.fixture
def calls(monkeypatch):
    """What `train` would run: ppo.train's Args or the recipe's options, without running them."""
    from mlir_rl_tui.agent import ppo, recipes

    seen: list = []
    monkeypatch.setattr(ppo, "train", lambda a, **kw: seen.append(a) or "policy.pt")
    monkeypatch.setattr(recipes, "train_default", lambda r, **kw: seen.append(r) or "default.pt")
    return seen


def test_train_without_recipe_is_ppo_with_its_defaults(calls, capsys):
    from mlir_rl_tui.agent.ppo import Args

    assert main(["train", "--programs", "a", "b", "--iterations", "2", "--no-norm-adv"]) == 0
    assert calls == [Args(programs=["a", "b"], iterations=2, norm_adv=False)]
    assert capsys.readouterr().out == "policy.pt\n"


def test_train_recipe_default_parses_with_the_recipe_defaults(calls, capsys):
    from mlir_rl_tui.agent.recipes import DefaultRecipe

    assert main(["train", "--recipe", "default", "--out", "run"]) == 0
    assert calls[-1] == DefaultRecipe(out="run") and (calls[-1].members, calls[-1].bc_epochs) == (1, 50)
    assert calls[-1].command() == "mlir-rl-tui train --recipe default --out DIR"
    assert main(["train", "--recipe", "default", "--out", "run", "--budget", "40", "--members", "2",
                 "--bc-epochs", "120", "--ship"]) == 0
    assert calls[-1] == DefaultRecipe(out="run", budget=40, members=2, bc_epochs=120, ship=True)
    assert calls[-1].command() == ("mlir-rl-tui train --recipe default --out DIR --budget 40 --members 2 "
                                   "--bc-epochs 120 --ship")


@pytest.mark.parametrize("argv,words", [
    (["train", "--budget", "3"], "--budget is an option of --recipe default only"),
    (["train", "--recipe", "default", "--out", "x", "--resume"], "--resume is not an option of --recipe default"),
    (["train", "--recipe", "default", "--out", "x", "--bc", "t.jsonl"], "--bc is not an option of --recipe default"),
    (["train", "--recipe", "default"], "--recipe default needs --out DIR"),
])
def test_train_mixing_the_modes_is_one_line(argv, words, calls, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and not calls


def test_train_help_is_short_and_documents_both_modes(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    assert len(text.splitlines()) <= 60
    out = " ".join(text.split())
    for words in ("--recipe default --out DIR", "resum", "--members N", "(default 3)", "--bc-epochs N",
                  "(default 50 per member; --bc: 100)", "--clip-coef X", "(default 2; PPO: 1)"):
        assert words in out, words


def test_the_recipe_runs_end_to_end_and_resumes(tmp_path, cache_dir, capsys, monkeypatch):
    """The whole recipe on two programs: programs drawn, teacher, rule checks, two members cloned, the vote
    ensemble, the evaluation, the record. Run again it redoes nothing it finished; a target line cut by an
    interrupt and a missing member are made again, and only they."""
    from mlir_rl_tui.agent import checkpoint as ck
    from mlir_rl_tui.agent import recipes
    from mlir_rl_tui.agent.recipes import CHECKPOINTS, PROGRAMS, read_targets
    from mlir_rl_tui.agent.suggest import load_policy

    monkeypatch.setattr(recipes, "EVAL_ROUNDS", 1)  # the evaluation's side-by-side rounds: one is a check

    shipped = os.path.join(CHECKPOINTS, "default.pt")
    before = os.stat(shipped).st_mtime_ns
    out = tmp_path / "run"
    argv = ["train", "--recipe", "default", "--out", str(out), "--budget", "2", "--members", "2", "--bc-epochs",
            "2", "--threads", "1", "--limit", "2"]
    assert main(argv) == 0
    std = capsys.readouterr()
    assert std.out == f"{out / 'default.pt'}\n"
    # only the folder the two programs come from was drawn (a quick check does not draw the rest)
    assert [p.name for p in (out / "programs").iterdir()] == [PROGRAMS[0].folder]
    targets = read_targets(str(out / "targets.jsonl"))
    assert len(targets) == 2 and all(t["measurements"] >= 1 and t["speedup"] > 0 for t in targets.values())
    info = json.loads((out / "default.json").read_text())
    assert info["command"] == "mlir-rl-tui " + " ".join(argv).replace(str(out), "DIR") and info["train_programs"] == 2
    assert info["commit"] and info["machine"] and info["recipe"]["decode"] == "vote"
    assert info["teacher"]["measurements"] == sum(t["measurements"] for t in targets.values())
    ev = info["evaluation"]
    assert ev["programs"] == 2 and ev["gmean_speedup"] > 0 and ev["ms_per_decision"] > 0
    vs = ev["against_shipped"]  # measured side by side with the shipped policy, in the same rounds
    figures = [(r["speedup"], r["shipped"]) for r in ev["per_program"].values()]
    assert vs["ratio"] == pytest.approx(math.prod(a / b for a, b in figures) ** 0.5, rel=0.01)  # of rounded figures
    assert vs["shipped_gmean_speedup"] > 0 and vs["faster"] + vs["slower"] <= 2
    assert set(info["cloning"]["loss"]) == {"member1.pt", "member2.pt"} and info["cloning"]["decisions"] >= 2
    assert ck.load(str(out / "default.pt"), "policy")[1]["members"] == 2
    assert load_policy(str(out / "default.pt")) is not None
    assert os.stat(shipped).st_mtime_ns == before  # no --ship: untouched
    for stage in ("programs", "teacher", "cloning (epochs)", "evaluation"):
        assert stage in info["seconds"]
    assert [(x["commit"], x["machine"], x["seconds_before"]) for x in info["runs"]] == [(info["commit"], info["machine"], 0)]

    # run again: nothing searched, nothing cloned, nothing evaluated again (the rows are kept); each stage's
    # seconds add up over the runs
    member2, ensemble = (out / "member2.pt").stat().st_mtime_ns, (out / "default.pt").stat().st_mtime_ns
    rows = (out / "evaluation.rows").read_text()
    assert main(argv) == 0
    capsys.readouterr()
    again = json.loads((out / "default.json").read_text())
    assert all(again["seconds"][k] >= info["seconds"][k] for k in info["seconds"]) and again["seconds"]["evaluation"] > 0
    assert (out / "evaluation.rows").read_text() == rows and again["evaluation"]["per_program"] == ev["per_program"]
    assert (out / "default.pt").stat().st_mtime_ns == ensemble  # not written again: its rows stay its own
    assert len((out / "targets.jsonl").read_text().splitlines()) == 2
    assert (out / "member2.pt").stat().st_mtime_ns == member2
    assert again["cloning"]["loss"] == info["cloning"]["loss"]  # members cloned earlier: their losses kept
    assert len(again["runs"]) == 2 and again["runs"][0] == info["runs"][0]  # each run of the folder, in order
    assert abs(again["runs"][1]["seconds_before"] - info["seconds"]["total"]) <= 2
    # an interrupt cut the second target's line and the second member was never written: both made again
    lines = (out / "targets.jsonl").read_text().splitlines()
    (out / "targets.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    (out / "member2.pt").unlink()
    member1 = (out / "member1.pt").stat().st_mtime_ns
    from mlir_rl_tui.engine.measure import machine

    monkeypatch.setattr(machine, "cpu_model", lambda fallback=None: "Another CPU")  # resumed on another machine: said, recorded
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"resuming a run last continued on machine {info['machine']}" in err and "this one: Another CPU" in err
    assert [x["machine"] for x in json.loads((out / "default.json").read_text())["runs"]] == \
        [info["machine"], info["machine"], "Another CPU"]
    assert "member2.pt" in err and "member1.pt:" not in err
    assert len(read_targets(str(out / "targets.jsonl"))) == 2 and (out / "member2.pt").exists()
    assert (out / "member1.pt").stat().st_mtime_ns == member1
