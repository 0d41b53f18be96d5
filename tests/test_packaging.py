"""The wheel as `pip wheel .` builds it: one import name, `mlir_rl_tui`, at the top of site-packages, with every
sub-package, the samples, lessons, styles and the shipped policy in it; installed next to a user's own
`engine` and `agent` packages, both import, and the command line works from the installed files alone.

The wheel is built from a copy of the build's inputs (no git there: the fallback version), without build
isolation (setuptools and setuptools-scm come with the [test] extra); `.ci/run` builds one from the clone
with its git version and installs it with its dependencies in a fresh venv (`scripts/check-wheel`)."""

from __future__ import annotations

import email.parser
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import tomllib
import zipfile

import pytest
from conftest import ROOT, SAMPLE_FILES

pytestmark = pytest.mark.slow

#: the repository's folders and the import names they install as (pyproject's package-dir)
MAPPED = {"mlir_rl_tui": "mlir_rl_tui", "engine": "mlir_rl_tui/engine", "agent": "mlir_rl_tui/agent"}
INPUTS = ("pyproject.toml", "README.md", "engine", "agent", "mlir_rl_tui", "samples")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    pytest.importorskip("setuptools_scm", reason="the [test] extra builds the wheel (bash scripts/setup --test)")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for name in INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "--disable-pip-version-check", "-w", str(tmp / "dist"), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = (tmp / "dist").glob("mlir_rl_tui-*.whl")
    return whl


def _names(whl: pathlib.Path) -> list[str]:
    with zipfile.ZipFile(whl) as z:
        return z.namelist()


def _dist_info(whl: pathlib.Path) -> str:
    return whl.name.split("-")[0] + "-" + whl.name.split("-")[1] + ".dist-info"


def test_one_top_level_name(wheel):
    assert {n.split("/")[0] for n in _names(wheel)} == {"mlir_rl_tui", _dist_info(wheel)}


def test_every_package_and_data_file_is_in_the_wheel(wheel):
    names = set(_names(wheel))
    for folder, target in MAPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            if "__pycache__" not in init.parts:
                rel = init.relative_to(ROOT / folder).as_posix()
                assert f"{target}/{rel}" in names, f"{folder}/{rel}: add its package to pyproject's list"
        for py in (ROOT / folder).rglob("*.py"):
            assert f"{target}/{py.relative_to(ROOT / folder).as_posix()}" in names, py
    assert {n for n in names if n.startswith("mlir_rl_tui/sample_programs/")} == \
        {f"mlir_rl_tui/sample_programs/{p.name}" for p in SAMPLE_FILES}
    for data in [*ROOT.glob("mlir_rl_tui/lessons/*.toml"), *ROOT.glob("mlir_rl_tui/*.tcss"),
                 *ROOT.glob("agent/checkpoints/*")]:
        folder = data.relative_to(ROOT).parts[0]
        assert f"{MAPPED[folder]}/{data.relative_to(ROOT / folder).as_posix()}" in names, data


def test_metadata_extras_and_entry_points(wheel):
    with zipfile.ZipFile(wheel) as z:
        info = _dist_info(wheel)
        meta = email.parser.Parser().parsestr(z.read(f"{info}/METADATA").decode())
        entry = z.read(f"{info}/entry_points.txt").decode()
    assert "mlir-rl-tui = mlir_rl_tui.commands:main" in entry
    assert {"openmp", "agent", "test"} <= set(meta.get_all("Provides-Extra"))
    requires = meta.get_all("Requires-Dist")
    assert 'intel-openmp==2026.2.0; extra == "openmp"' in requires
    assert any(r.startswith("mlir-rl-tui[openmp]") and 'extra == "agent"' in r for r in requires)
    with open(ROOT / "pyproject.toml", "rb") as f:  # built without git metadata: the fallback version
        assert meta["Version"] == tomllib.load(f)["tool"]["setuptools_scm"]["fallback_version"]


def test_installed_next_to_a_users_engine_and_agent(wheel, tmp_path, cache_dir):
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                        "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in site.iterdir() if p.name != "bin") == ["mlir_rl_tui", _dist_info(wheel)]
    user = tmp_path / "user"
    for pkg in ("engine", "agent"):
        (user / pkg).mkdir(parents=True)
        (user / pkg / "__init__.py").write_text(f"WHO = 'the user\\'s {pkg}'\n")
    elsewhere = tmp_path / "elsewhere"  # not the checkout: its engine/ and agent/ are not on the path
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(user), str(site)]))
    code = textwrap.dedent("""
        import json, engine, agent, gymnasium
        import mlir_rl_tui.engine, mlir_rl_tui.agent
        from gymnasium.envs.registration import load_env_creator
        make = load_env_creator(gymnasium.spec("mlir_rl/Schedule-v0").entry_point)
        print(json.dumps({"engine": engine.WHO, "agent": agent.WHO, "ours": mlir_rl_tui.engine.__file__,
                          "agent_ours": mlir_rl_tui.agent.__file__, "env": make.__code__.co_filename}))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=elsewhere,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["engine"] == "the user's engine" and got["agent"] == "the user's agent"
    for key, rel in (("ours", "engine/__init__.py"), ("agent_ours", "agent/__init__.py"), ("env", "engine/rl/env.py")):
        assert pathlib.Path(got[key]) == site / "mlir_rl_tui" / rel, key
    # the command line from the installed files: the samples by name, the loader process (its own boot)
    r = subprocess.run([sys.executable, "-m", "mlir_rl_tui", "inspect", "matmul", "--json"], capture_output=True,
                       text=True, env=env, cwd=elsewhere, timeout=120)
    assert r.returncode == 0, r.stderr
    assert pathlib.Path(json.loads(r.stdout)["program"]) == site / "mlir_rl_tui" / "sample_programs" / "matmul.mlir"


def test_the_openmp_runtime_of_the_extra_is_found(monkeypatch):
    """[openmp] (in [agent]) installs intel-openmp, whose libiomp5.so pip puts in the environment's lib/."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("intel-openmp")
    except PackageNotFoundError:
        pytest.skip("intel-openmp is not installed (the [openmp] extra)")
    from mlir_rl_tui.engine.run.compile import parallel_runtime

    monkeypatch.delenv("MLIR_RL_PARALLEL", raising=False)
    monkeypatch.delenv("MLIR_RL_OPENMP", raising=False)
    assert parallel_runtime() == ("openmp", os.path.join(sys.prefix, "lib", "libiomp5.so"))
