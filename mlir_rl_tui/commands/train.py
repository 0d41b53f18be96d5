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

from mlir_rl_tui.agent import ppo, recipes
from mlir_rl_tui.commands.common import CliError

DESCRIPTION = f"""Without --recipe: PPO on --programs (folders, a dataset manifest's train split or .mlir files)
into --out (policy.pt, last.pt to --resume, progress.csv); with --bc TRACE..., behaviour cloning on the traces
first, then PPO from the cloned weights.

With --recipe default: {recipes.__doc__.split(chr(10), 2)[2]}"""

BC_EPOCHS = 100  # behaviour cloning on --bc traces
_PPO = {f.name: f for f in dataclasses.fields(ppo.Args)}
_RECIPE = {f.name: f for f in dataclasses.fields(recipes.DefaultRecipe)}
_BC = {"bc", "bc_epochs"}
_TYPES = {"int": int, "int | None": int, "float": float, "float | None": float}


def field_docs(cls: type) -> dict[str, str]:
    """The docstrings under a dataclass's fields (cleanrl's style, as in ppo.Args): the options' help."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    return {a.target.id: " ".join(b.value.value.split()) for a, b in zip(body, body[1:])
            if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)}


def _default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _shown(v) -> str | None:
    """A default as the help shows it; None when there is nothing to show (None, False, [])."""
    if v is None or v is False or v == []:
        return None
    return " ".join(map(str, v)) if isinstance(v, list) else str(v)


def _option(group, f: dataclasses.Field, help: str, nargs: str = "*", **kw) -> None:
    """The option of a dataclass field. Its default stays out of the namespace (argparse.SUPPRESS): the
    dataclass of the mode that runs (ppo.Args or recipes.DefaultRecipe) supplies it."""
    name = "--" + f.name.replace("_", "-")
    if f.type == "bool":
        action = argparse.BooleanOptionalAction if _default(f) else "store_true"
        group.add_argument(name, action=action, default=argparse.SUPPRESS, help=help)
    elif str(f.type).startswith("list"):
        group.add_argument(name, nargs=nargs, default=argparse.SUPPRESS, help=help, metavar=f.name.upper(), **kw)
    else:
        group.add_argument(name, type=_TYPES.get(str(f.type), str), default=argparse.SUPPRESS, help=help, **kw)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--recipe", choices=recipes.RECIPES,
                   help="run the recipe of the shipped policy instead (see above: the shipped run took 27 minutes)")
    ppo_docs, recipe_docs = field_docs(ppo.Args), field_docs(recipes.DefaultRecipe)

    def shared(f: dataclasses.Field) -> str:
        """The help of a PPO option, with what it means and its default under --recipe default."""
        parts = [ppo_docs[f.name]] if f.name in ppo_docs else []
        if _shown(_default(f)):
            parts.append(f"default {_shown(_default(f))}")
        if f.name in _RECIPE:
            d = _shown(_default(_RECIPE[f.name]))
            if f.name in recipe_docs:
                parts.append(f"--recipe default: {recipe_docs[f.name]}" + (f", default {d}" if d else ""))
            elif _default(_RECIPE[f.name]) != _default(f):
                parts.append(f"with --recipe default {d}")
        return "; ".join(parts)

    g = p.add_argument_group("PPO, and where it says so, the recipe")
    for f in _PPO.values():
        _option(g, f, shared(f), nargs="+")
    g.add_argument("--bc", nargs="*", metavar="TRACE", default=argparse.SUPPRESS,
                   help="behaviour cloning on these traces first (pre-training), then PPO from the result")
    g.add_argument("--bc-epochs", type=int, default=argparse.SUPPRESS,
                   help=f"behaviour-cloning epochs; default {BC_EPOCHS}, with --recipe default "
                        f"{_default(_RECIPE['bc_epochs'])}")
    r = p.add_argument_group("the recipe only (--recipe default)")
    for f in _RECIPE.values():
        if f.name not in _PPO and f.name not in _BC:
            d = _shown(_default(f))
            _option(r, f, recipe_docs[f.name] + (f" (default {d})" if d else ""),
                    **({"choices": recipes.TEACHERS} if f.name == "teacher" else {}))


def run(args: argparse.Namespace) -> int:
    given = {k: v for k, v in vars(args).items() if k not in ("command", "handler", "recipe")}
    if args.recipe:
        return _recipe(given)
    wrong = sorted(given.keys() - _PPO.keys() - _BC)
    if wrong:
        raise CliError(f"--{wrong[0].replace('_', '-')} is an option of --recipe default only")
    return _ppo(given)


def _ppo(given: dict) -> int:
    from mlir_rl_tui.progress import ProgressLine

    traces, epochs = given.pop("bc", []), given.pop("bc_epochs", BC_EPOCHS)
    a = ppo.Args(**given)
    if traces:
        from mlir_rl_tui.agent import bc
        from mlir_rl_tui.agent.data import load_programs
        from mlir_rl_tui.agent.policy import ActorCritic, load, save

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
    if "programs" in given:
        if len(given["programs"]) != 1:
            raise CliError("--recipe default takes one --programs folder (an engine.dataset folder); "
                           "add more with --more")
        given["programs"] = given["programs"][0]
    with ProgressLine() as line:
        path = recipes.train_default(recipes.DefaultRecipe(**given), log=line.log, on_progress=line.update)
    print(path)
    return 0
