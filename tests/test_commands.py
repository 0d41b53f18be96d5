"""The command line's shape: one registry, one module per command loaded by name, a light `--help`, the
entry points, and `train --recipe default` (the shipped policy's recipe) parsed and run small."""

from __future__ import annotations

import ast
import json
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest
from conftest import ROOT, SAMPLES

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
            light = ("mlir_rl_tui.engine.samples",)  # file names only: `mlir-rl-tui samples` answers at once
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

    assert main(["train", "--recipe", "default"]) == 0
    assert calls[-1] == DefaultRecipe() and (calls[-1].bc_epochs, calls[-1].iterations) == (60, 0)
    assert main(["train", "--recipe", "default", "--programs", "runs/dataset", "--budget", "40", "--bc-epochs",
                 "120", "--more", "x", "y", "--exclude", "--learning-rate", "1e-5", "--ship"]) == 0
    assert calls[-1] == DefaultRecipe(programs="runs/dataset", budget=40, bc_epochs=120, more=["x", "y"], exclude=[],
                                      learning_rate=1e-5, ship=True)
    assert calls[-1].command() == ("mlir-rl-tui train --recipe default --programs runs/dataset --more x y --exclude "
                                   "--budget 40 --bc-epochs 120 --learning-rate 1e-05 --ship")


@pytest.mark.parametrize("argv,words", [
    (["train", "--budget", "3"], "--budget is an option of --recipe default only"),
    (["train", "--recipe", "default", "--resume"], "--resume is not an option of --recipe default"),
    (["train", "--recipe", "default", "--bc", "t.jsonl"], "--bc is not an option of --recipe default"),
    (["train", "--recipe", "default", "--programs", "a", "b"], "one --programs folder"),
])
def test_train_mixing_the_modes_is_one_line(argv, words, calls, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and "\n" not in err and not calls


def test_train_help_documents_the_recipe(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for words in ("recipe_search", "Behaviour cloning", "--bc-epochs", "230 programs", "90 minutes",
                  "--limit LIMIT", "with --recipe default 0.0001"):
        assert words in out, words


def test_train_names_an_unknown_rule_in_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--recipe", "default", "--out", str(out), "--rule-groups", "TF+rows", "sereal"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown rule 'sereal' in --rule-groups" in err and "\n" not in err and not out.exists()


def test_tiny_recipe_runs_end_to_end(tmp_path, cache_dir, capsys):
    """The whole pipeline on one program: generate, teacher, cloning, one PPO iteration, choice, record."""
    from mlir_rl_tui.agent.recipes import CHECKPOINTS
    from mlir_rl_tui.agent.suggest import load_policy

    shipped = os.path.join(CHECKPOINTS, "default.pt")
    before = os.stat(shipped).st_mtime_ns if os.path.exists(shipped) else None
    out = tmp_path / "run"
    argv = ["train", "--recipe", "default", "--out", str(out), "--n", "2", "--exclude", "--budget", "2",
            "--bc-epochs", "1", "--iterations", "1", "--programs-per-batch", "2", "--threads", "1", "--limit", "1"]
    assert main(argv) == 0
    std = capsys.readouterr()
    assert std.out == f"{out / 'default.pt'}\n"
    assert "BC epoch 1" in std.err and "greedy ppo policy" in std.err
    info = json.loads((out / "default.json").read_text())
    assert info["train_programs"] == 1 and info["bc_epochs"] == 1 and info["ppo"]["iterations"] == 1
    assert info["command"] == "mlir-rl-tui " + " ".join(argv)
    assert set(info["greedy_train_gmean"]) == {"bc", "ppo"} and info["shipped"] in ("bc", "ppo")
    assert load_policy(str(out / "default.pt")) is not None
    assert (os.stat(shipped).st_mtime_ns if os.path.exists(shipped) else None) == before  # no --ship: untouched
    # a re-run (replayed from the cache) replaces the teacher's traces: one schedule per program and kind
    assert main(argv[:-8] + ["--iterations", "0", "--threads", "1", "--limit", "1"]) == 0
    capsys.readouterr()
    from mlir_rl_tui.engine.trace import read_trace

    for kind in ("search", "target"):
        assert len(read_trace(str(out / "traces" / kind / "000.jsonl")).episodes()) == 1
    # expert iteration: the hill teacher, then a climb from the shipped policy's own schedule on the program
    assert main(argv[:-8] + ["--teacher", "hill", "--start-from", shipped, "--start-budget", "1",
                             "--confirm-rounds", "1", "--threads", "1", "--limit", "1"]) == 0
    err = capsys.readouterr().err
    assert "from the policy's schedule" in err, err
    info = json.loads((out / "default.json").read_text())
    assert info["start_from"] == shipped and info["start_budget"] == 1
    # another cloning of the same targets (e.g. an ensemble's member): no search, the earlier run's targets
    again = tmp_path / "again"
    from mlir_rl_tui.agent import checkpoint as ck
    from mlir_rl_tui.agent.policy import save_member

    one = shipped  # cloning starts from one policy: the shipped ensemble's first member
    if ck.load(shipped, "policy")[1].get("members"):
        save_member(shipped, 1, one := str(tmp_path / "member1.pt"))
    assert main(["train", "--recipe", "default", "--out", str(again), "--programs", str(out / "dataset"),
                 "--exclude", "--targets-from", str(out), "--seed", "1", "--bc-epochs", "1", "--threads", "1",
                 "--limit", "1", "--prefer-rules", "0.97", "--rule-groups", "depthwise", "pool",
                 "--bc-init", one, "--bc-lr", "0"]) == 0
    assert "target of" in capsys.readouterr().err
    info = json.loads((again / "default.json").read_text())
    assert info["targets_from"] == str(out) and info["teacher_measurements"] == 0
    # the rule groups are checked on the earlier targets; on a program without NCHW depthwise convolutions or
    # poolings they change nothing, so nothing is timed (tests/test_teacher.py times them where they apply)
    assert info["rule_groups"] == ["depthwise", "pool"] and info["target_measurements"] == 0
    # --bc-init: the cloning starts from the shipped weights (at learning rate 0 it ends with them too)
    import torch

    assert info["bc_init"] == one
    start, end = ck.load(one, "policy")[0], ck.load(str(again / "bc.pt"), "policy")[0]
    assert start.keys() == end.keys() and all(torch.equal(start[k], end[k]) for k in start)
    first, second = (read_trace(str(d / "traces" / "target" / "000.jsonl")).episodes()[0] for d in (out, again))
    assert first.schedule == second.schedule and first.program_sha256 == second.program_sha256
    # a program the earlier run has no target for (here the second of --n 2; e.g. a folder added to --more)
    # goes to the teacher; the first keeps its earlier target
    grown = tmp_path / "grown"
    assert main(["train", "--recipe", "default", "--out", str(grown), "--programs", str(out / "dataset"),
                 "--exclude", "--targets-from", str(out), "--teacher", "hill", "--budget", "2", "--bc-epochs", "1",
                 "--threads", "1", "--limit", "2", "--prefer-rules", "0", "--bc-init", one, "--bc-lr", "0"]) == 0
    err = capsys.readouterr().err
    assert "1 training programs without a target in" in err and "target of" in err, err
    info = json.loads((grown / "default.json").read_text())
    assert info["train_programs"] == 2 and info["teacher_measurements"] >= 1
    grown_first = read_trace(str(grown / "traces" / "target" / "000.jsonl")).episodes()[0]
    assert grown_first.schedule == first.schedule
    assert read_trace(str(grown / "traces" / "search" / "001.jsonl")).episodes()  # searched by the teacher
    assert not (grown / "traces" / "search" / "000.jsonl").exists()  # not searched again
    # --anchor: the targets are a policy's own one-pass schedules, no search
    anchored = tmp_path / "anchored"
    assert main(["train", "--recipe", "default", "--out", str(anchored), "--programs", str(out / "dataset"),
                 "--exclude", "--anchor", one, "--bc-epochs", "1", "--threads", "1", "--limit", "1",
                 "--prefer-rules", "0", "--bc-init", one, "--bc-lr", "0"]) == 0
    assert f"own schedule of {one}" in capsys.readouterr().err
    info = json.loads((anchored / "default.json").read_text())
    assert info["anchor"] == one and info["teacher_measurements"] == 0 and "--anchor" in info["how"]
    from mlir_rl_tui.agent.suggest import to_measure
    from mlir_rl_tui.engine import Session, load_file

    ep = read_trace(str(anchored / "traces" / "target" / "000.jsonl")).episodes()[0]
    own = load_policy(one).schedule(Session(load_file(ep.program), openmp=True)).schedule
    assert ep.schedule == (to_measure(own) if len(to_measure(own)) else own)
    assert main(["train", "--recipe", "default", "--out", str(tmp_path / "none"), "--anchor", one,
                 "--targets-from", str(out), "--n", "2", "--exclude", "--limit", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "give one" in err and "\n" not in err
    from mlir_rl_tui.agent.recipes import earlier_targets
    from mlir_rl_tui.engine import EngineError

    with pytest.raises(EngineError, match="the target of another program"):
        earlier_targets(str(out), [load_file(str(SAMPLES / "relu.mlir"))])
    assert main(["train", "--recipe", "default", "--out", str(tmp_path / "none"), "--targets-from",
                 str(tmp_path), "--n", "2", "--exclude", "--limit", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no traces/target folder" in err and "\n" not in err
    assert main(["train", "--recipe", "default", "--out", str(tmp_path / "none"), "--bc-init",
                 str(tmp_path / "missing.pt"), "--n", "2", "--exclude", "--limit", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "missing.pt" in err and "\n" not in err


def test_the_engine_imports_neither_the_app_nor_the_agent_nor_torch():
    """Dependencies point one way (mlir_rl_tui -> agent -> engine): every import in engine/, also the ones
    inside functions."""
    for path in (ROOT / "engine").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.startswith("torch"), (path, name)
                assert not name.startswith("mlir_rl_tui") or name.startswith("mlir_rl_tui.engine"), (path, name)
