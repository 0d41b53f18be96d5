"""The architecture as the tree shows it (docs/architecture.md): the engine in subpackages that say their job,
dependencies one way, and no module reaching into another's private names."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = {"engine": "mlir_rl_tui.engine", "agent": "mlir_rl_tui.agent", "mlir_rl_tui": "mlir_rl_tui"}
#: the library runtime calls a built kernel with MLIR's memref descriptors (mlir.runtime): it is not the UI
MLIR_USERS = {"mlir_rl_tui/runtime.py"}


def modules() -> dict[str, pathlib.Path]:
    """Dotted name -> file of every module of the three packages."""
    out = {}
    for folder, dotted in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([dotted, *parts])] = path
    return out


def imports(path: pathlib.Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import of a file, also the ones inside functions."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module, [a.name for a in node.names]))
    return out


def test_the_engine_imports_neither_the_app_nor_the_agent_nor_torch():
    """Dependencies point one way (mlir_rl_tui -> agent -> engine)."""
    for path in (ROOT / "engine").rglob("*.py"):
        for line, name, _ in imports(path):
            assert not name.startswith("torch"), (path, line, name)
            assert not name.startswith("mlir_rl_tui") or name.startswith("mlir_rl_tui.engine"), (path, line, name)


def test_the_app_and_the_agent_reach_mlir_only_through_the_engine():
    bad = [f"{path.relative_to(ROOT)}:{line}: {name}" for folder in ("mlir_rl_tui", "agent")
           for path in (ROOT / folder).rglob("*.py") if str(path.relative_to(ROOT)) not in MLIR_USERS
           for line, name, _ in imports(path) if name == "mlir" or name.startswith("mlir.")]
    assert not bad, bad


def test_the_engine_shows_its_parts():
    """A short top level; every subpackage says its job in its docstring and ships in the wheel."""
    top = sorted(p.name for p in (ROOT / "engine").glob("*.py"))
    assert len(top) <= 12, top
    wheel = (ROOT / "pyproject.toml").read_text()
    for sub in sorted(p for p in (ROOT / "engine").iterdir() if p.is_dir() and p.name != "__pycache__"):
        init = sub / "__init__.py"
        assert init.exists(), f"engine/{sub.name} is not a package"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 40, f"engine/{sub.name}/__init__.py does not say its job"
        assert f'"mlir_rl_tui.engine.{sub.name}"' in wheel, f"engine/{sub.name} is not in pyproject's packages"


def test_no_module_imports_another_modules_private_names():
    """`from X import _name` (or `X._name` on an imported module) across modules: a private name is its
    module's; what another module needs is public, in the one place its concept lives."""
    known = modules()
    bad = []
    for dotted, path in known.items():
        tree = ast.parse(path.read_text())
        aliases = {}
        for line, module, names in imports(path):
            if module not in known or module == dotted:
                continue
            bad += [f"{path.relative_to(ROOT)}:{line}: {module}.{n}" for n in names
                    if n.startswith("_") and not n.startswith("__")]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if f"{node.module}.{a.name}" in known:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in known:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and aliases[node.value.id] != dotted:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    assert not bad, bad
