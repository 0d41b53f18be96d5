"""`mlir-rl-tui train`: PPO (agent.ppo), optionally after behaviour cloning on traces (agent.bc); or, with
`--recipe default`, the recipe of the shipped policy (agent.recipes). Options come from the fields of
`ppo.Args` and `recipes.DefaultRecipe`: an option left out takes the default of the mode that runs."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import os
import sys
import textwrap

from mlir_rl_tui.agent import ppo_args, recipes
from mlir_rl_tui.cli.options import positive_int
from mlir_rl_tui.cli.output import CliError
from mlir_rl_tui.cli.paths import folder

USAGE = "mlir-rl-tui train [--recipe default --out DIR | --programs ... --out DIR] [options]"
DESCRIPTION = """--recipe default --out DIR makes the shipped policy from the repository alone, resuming
where it stopped (docs/agent.md); without --recipe, PPO on --programs."""

BC_EPOCHS = 100  # behaviour cloning on --bc traces
_PPO = {f.name: f for f in dataclasses.fields(ppo_args.Args)}
_RECIPE = {f.name: f for f in dataclasses.fields(recipes.DefaultRecipe)}
_BC = {"bc", "bc_epochs"}
_TYPES = {"int": positive_int, "int | None": positive_int, "float": float, "float | None": float}
_SIGNED = {"seed"}  # the int fields that are not counts (every other one is 1 or more)


def field_docs(cls: type) -> dict[str, str]:
    """The docstrings under a dataclass's fields (cleanrl's style, as in ppo.Args): the options' help."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    return {a.target.id: " ".join(b.value.value.split()) for a, b in zip(body, body[1:])
            if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)}


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _shown(v) -> str | None:
    """A default as the help shows it; None when there is nothing to show (None, False, [], "")."""
    if v is None or v is False or v == [] or v == "":
        return None
    return " ".join(map(str, v)) if isinstance(v, list) else str(v)


def _help(doc: str | None, default) -> str:
    shown = _shown(default)
    return ((doc or "") + (f" (default {shown})" if shown else "")).replace("%", "%%")


def _option(group, f: dataclasses.Field, help: str, nargs: str = "*") -> None:
    """The option of a dataclass field. Its default stays out of the namespace (argparse.SUPPRESS): the
    dataclass of the mode that runs (ppo.Args or recipes.DefaultRecipe) supplies it."""
    name = "--" + f.name.replace("_", "-")
    metavar = {"int": "N", "int | None": "N", "float": "X", "float | None": "X"}.get(
        str(f.type), "ADDRESS" if f.name == "ray_address" else "PATH")
    if f.type == "bool":
        action = argparse.BooleanOptionalAction if _default(f) else "store_true"
        group.add_argument(name, action=action, default=argparse.SUPPRESS, help=help)
    elif str(f.type).startswith("list"):
        group.add_argument(name, nargs=nargs, default=argparse.SUPPRESS, help=help, metavar="PATH")
    else:
        kind = int if f.name in _SIGNED else _TYPES.get(str(f.type), str)
        group.add_argument(name, type=kind, default=argparse.SUPPRESS, help=help, metavar=metavar)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.usage = USAGE
    wide = p.formatter_class  # the options' names are long: their help starts further right
    p.formatter_class = lambda prog: wide(prog, max_help_position=28)
    p.add_argument("--recipe", choices=recipes.RECIPES, help="run the recipe of the shipped policy")
    r = p.add_argument_group("--recipe default")
    recipe_docs, ppo_docs = field_docs(recipes.DefaultRecipe), field_docs(ppo_args.Args)
    for f in _RECIPE.values():
        if f.name == "bc_epochs":
            _option(r, f, f"cloning epochs (default {f.default} per member; --bc: {BC_EPOCHS})")
        elif f.name in _PPO:  # one option for both modes: the recipe's help and default, then PPO's
            d, d_ppo = _shown(_default(f)), _shown(_default(_PPO[f.name]))
            _option(r, f, (recipe_docs.get(f.name) or "")
                    + (f" (default {d}" + (f"; PPO: {d_ppo})" if d_ppo != d else ")") if d else ""))
        else:
            _option(r, f, _help(recipe_docs.get(f.name), _default(f)))
    g = p.add_argument_group("PPO")
    for f in _PPO.values():
        if f.name not in _RECIPE:
            _option(g, f, _help(ppo_docs.get(f.name), _default(f)), nargs="+")
    g.add_argument("--bc", nargs="*", metavar="TRACE", default=argparse.SUPPRESS,
                   help="behaviour cloning on these traces first, then PPO from the result")


def run(args: argparse.Namespace) -> int:
    given = {k: v for k, v in vars(args).items() if k not in ("command", "handler", "recipe")}
    out = given.get("out")
    if out:
        folder("--out", out, why="training writes its checkpoints into a folder")
    if args.recipe:
        return _recipe(given)
    wrong = sorted(given.keys() - _PPO.keys() - _BC)
    if wrong:
        raise CliError(f"--{wrong[0].replace('_', '-')} is an option of --recipe default only")
    return _ppo(given)


def _ppo(given: dict) -> int:
    from mlir_rl_tui.agent import ppo
    from mlir_rl_tui.progress import ProgressLine

    traces, epochs = given.pop("bc", []), given.pop("bc_epochs", BC_EPOCHS)
    a = ppo.Args(**given)
    if traces:
        from mlir_rl_tui.agent import bc
        from mlir_rl_tui.agent.policy import ActorCritic, load, save
        from mlir_rl_tui.engine.corpus.programs import load_programs

        progs = load_programs(a.programs, split="train")
        examples = [e for t in traces for e in bc.examples_from_trace(t, progs)]
        model = load(a.init)[0] if a.init else ActorCritic()
        losses = bc.behaviour_cloning(model, examples, epochs, seed=a.seed)
        os.makedirs(a.out, exist_ok=True)
        a.init = os.path.join(a.out, "bc.pt")
        save(model, a.init, {"trained_by": "bc", "traces": traces, "final_loss": losses[-1]})
        print(f"behaviour cloning: {len(examples)} decisions, loss {losses[0]:.3f} -> {losses[-1]:.3f}",
              file=sys.stderr)
    with ProgressLine() as line:
        path = ppo.train(a, on_progress=line.update, on_iteration=lambda row: line.log(
            f"PPO iteration {row['iteration']}/{a.iterations}: reward {row['charts/reward']:.3f}, speedup "
            f"{row['charts/speedup_gmean']:.2f}x, {row['time_s']:.0f} s"))
    print(path)
    return 0


def _recipe(given: dict) -> int:
    from mlir_rl_tui.progress import ProgressLine

    wrong = sorted(given.keys() - _RECIPE.keys())
    if wrong:
        raise CliError(f"--{wrong[0].replace('_', '-')} is not an option of --recipe default")
    if not given.get("out"):
        raise CliError("--recipe default needs --out DIR, the run's folder (an interrupted run resumes from it)")
    with ProgressLine() as line:
        path = recipes.train_default(recipes.DefaultRecipe(**given), log=line.log, on_progress=line.update)
    print(path)
    return 0
