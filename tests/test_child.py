"""The one child-process layer (engine.run.child): a module run to its end says how it ended in one line, and a
time-out takes the child with everything it started."""

import os
import time

from mlir_rl_tui.engine.run.child import run_module

MODULE = """import os, signal, subprocess, sys, time
print("started", flush=True)
how = sys.argv[1]
if how == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
if how == "fail":
    sys.exit("the reason it gave")
if how == "hang":
    kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open(sys.argv[2], "w").write(str(kid.pid))
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone but for its exit status
        return f.read().split(") ")[1][0] != "Z"


def test_a_module_run_to_its_end_says_how_it_ended(tmp_path):
    (tmp_path / "child_mod.py").write_text(MODULE)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    ok = run_module("child_mod", ["ok"], 60, env)
    assert ok.returncode == 0 and ok.problem is None and ok.stdout == "started\n"
    segv = run_module("child_mod", ["segv"], 60, env)
    assert segv.returncode == -11 and segv.problem == "killed by SIGSEGV", segv
    fail = run_module("child_mod", ["fail"], 60, env)
    assert fail.returncode == 1 and fail.problem == "the reason it gave", fail


def test_a_time_out_stops_the_child_and_what_it_started(tmp_path):
    (tmp_path / "child_mod.py").write_text(MODULE)
    pid_file = tmp_path / "kid.pid"
    t0 = time.monotonic()
    r = run_module("child_mod", ["hang", str(pid_file)], 3, dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert r.returncode is None and r.problem == "it did not finish in 3 s and was stopped"
    assert time.monotonic() - t0 < 60  # not the child's 120 s
    kid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(kid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(kid), "the grandchild outlived the time-out"
