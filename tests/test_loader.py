"""Loading that cannot kill the caller (issue 11): every bad input is one LoadError line, in this process.

Each input here aborted or segfaulted the process that parsed it before loading moved to a guarded
loader process (engine.ir.loader); the tests run in-process, so a regression kills the test run itself.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import threading
import time

import pytest
from bad_inputs import KINDS, add, chain, matmul, multi_public, nested_types, private_helper_first, write
from conftest import SAMPLE_FILES, SAMPLES, TORCH, TORCH_FILES, mlir_opt_path

from mlir_rl_tui.engine import LoadError, load, load_file
from mlir_rl_tui.engine.errors import EntryError
from mlir_rl_tui.engine.ir.loader import LoaderProcess, loader, read_program_file
from mlir_rl_tui.engine.ir.program import MAX_OPS, measurement_note
from mlir_rl_tui.engine.ir.text_check import MAX_NESTING, check_text


def _load_within(path, seconds: float = 5.0, entry: str | None = None):
    """load_file in a thread, so a regression that blocks (a FIFO) fails the test instead of hanging it."""
    out: dict = {}

    def run() -> None:
        try:
            out["program"] = load_file(str(path), entry)
        except Exception as e:  # noqa: BLE001 - inspected below
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"loading {path} did not finish within {seconds} s"
    out["seconds"] = time.monotonic() - t0
    return out


@pytest.mark.parametrize("kind", [k for k, (_, cmds) in KINDS.items() if "inspect" in cmds])
def test_every_bad_input_kind_is_one_load_error_line(kind, tmp_path):
    words, _ = KINDS[kind]
    path = write(kind, tmp_path)
    out = _load_within(path)
    err = out.get("error")
    assert isinstance(err, LoadError), out
    msg = str(err)
    assert "\n" not in msg and msg.startswith(str(path)) and words in msg, msg
    assert out["seconds"] < 5


def test_fifo_is_refused_before_it_is_opened(tmp_path):
    path = tmp_path / "pipe.mlir"
    os.mkfifo(path)
    with pytest.raises(LoadError, match="FIFO"):
        read_program_file(str(path))  # would block forever in open() waiting for a writer


def test_socket_and_device_are_refused(tmp_path):
    sock_path = str(tmp_path / "s.mlir")
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(sock_path)
        with pytest.raises(LoadError, match="socket"):
            load_file(sock_path)
    finally:
        s.close()
    with pytest.raises(LoadError, match="character device"):
        load_file("/dev/zero")  # reading it would never end


def test_random_cuts_of_torch_exports_never_kill_the_caller():
    """Cuts at random offsets (half of them aborted MLIR's parser before): each loads or is one line."""
    rng = random.Random(11)
    for path in TORCH_FILES:
        text = path.read_text()
        for _ in range(8):
            cut = rng.randrange(1, len(text))
            try:
                load(text[:cut], name="cut.mlir")
            except LoadError as e:
                assert "\n" not in str(e) and str(e).startswith("cut.mlir")
    load_file(str(SAMPLES / "matmul.mlir"))  # and loading still works


def test_parser_crash_is_reported_and_the_next_load_works():
    """Nesting the text checks do not see (tuple<tuple<...>>) segfaults the parser: the guard's case."""
    starts = loader().starts
    with pytest.raises(LoadError, match=r"crashed \(SIGSEGV\)"):
        load(nested_types(), name="deep.mlir")
    assert load_file(str(SAMPLES / "add.mlir")).ops
    assert loader().starts == starts + 1  # a fresh loader took over


def test_loader_killed_mid_request_is_one_line(tmp_path):
    lp = LoaderProcess()
    try:
        lp.request({"mode": "load", "name": "warm"}, (SAMPLES / "add.mlir").read_text(), "warm")  # started
        text = (SAMPLES / "add.mlir").read_text() + "// " + "x" * 40_000_000 + "\n"  # takes a while to check
        killed: list[int] = []

        def kill(elapsed: float) -> None:
            if not killed and lp.child is not None:
                killed.append(lp.child.proc.pid)
                os.kill(lp.child.proc.pid, signal.SIGABRT)

        with pytest.raises(LoadError) as e:
            lp.request({"mode": "load", "name": "big.mlir"}, text, "big.mlir", on_wait=kill)
        assert killed and "crashed (SIGABRT" in str(e.value) and "\n" not in str(e.value)
        res = lp.request({"mode": "load", "name": "again"}, (SAMPLES / "add.mlir").read_text(), "again")
        assert res["status"] == "ok" and lp.starts == 2
    finally:
        lp.close()


def test_loader_time_out_is_one_line():
    lp = LoaderProcess()
    try:
        text = (SAMPLES / "add.mlir").read_text() + "// " + "x" * 40_000_000 + "\n"
        with pytest.raises(LoadError, match="no answer from MLIR's parser within"):
            lp.request({"mode": "load", "name": "slow.mlir"}, text, "slow.mlir", timeout_s=0.01)
        assert lp.child is None  # killed; the next request starts a fresh one
    finally:
        lp.close()


def test_loader_memory_limit_is_one_line():
    lp = LoaderProcess(memory_limit=1 << 30)  # Python + MLIR take about 0.4 GiB of address space
    try:
        text = (SAMPLES / "add.mlir").read_text() + "// " + "x" * 400_000_000 + "\n"
        try:  # Python's MemoryError is an answer; C++'s bad_alloc kills the loader: both are one line
            res = lp.request({"mode": "load", "name": "huge.mlir"}, text, "huge.mlir")
            assert res["status"] == "error"
            msg = res["error"]
        except LoadError as e:
            msg = str(e)
        assert msg.startswith("huge.mlir") and "memory" in msg and "\n" not in msg
    finally:
        lp.close()


# ----------------------------------------------------------------------------------------------
def test_text_check_passes_every_sample_and_export():
    for path in SAMPLE_FILES + TORCH_FILES:
        assert check_text(path.read_text(), path.name) is None, path


def test_text_check_names_the_problem():
    assert "string literal is not closed" in check_text('x = "0x0400\n', "a")
    assert "ends inside 2 unclosed brackets" in check_text("module {\n func.func @f() {\n", "a")
    assert f"nested more than {MAX_NESTING}" in check_text("[" * (MAX_NESTING + 1), "a")
    assert check_text('s = "a \\" {"  // comment {\n', "a") is None  # brackets in strings and comments


# ----------------------------------------------------------------------------------------------
def test_several_public_functions_need_an_entry():
    with pytest.raises(EntryError) as e:
        load(multi_public(), name="m.mlir")
    assert e.value.candidates == ["first", "second"] and "--entry" in str(e.value)
    second = load(multi_public(), name="m.mlir", entry="second")
    assert second.func_name == "second" and [o.name for o in second.ops] == ["linalg.add"]
    first = load(multi_public(), name="m.mlir", entry="@first")
    assert first.func_name == "first" and [o.name for o in first.ops] == ["linalg.matmul", "linalg.fill"]
    assert first.functions == ["first", "second"]


def test_private_helper_before_the_public_function_needs_an_entry():
    with pytest.raises(EntryError) as e:
        load(private_helper_first(), name="h.mlir")
    assert e.value.candidates == ["helper", "forward"]
    helper = load(private_helper_first(), name="h.mlir", entry="helper")
    assert helper.func_name == "helper" and [o.id for o in helper.ops] == ["op0"]
    with pytest.raises(EntryError, match="no function @nope; --entry must name one of @helper, @forward"):
        load(private_helper_first(), name="h.mlir", entry="nope")


def test_each_entry_is_its_own_program_for_caches_and_traces():
    """Measurement cache and the worker's baselines are keyed by sha256: two entries of a file differ."""
    from mlir_rl_tui.engine.ir.program import sha256_text

    text = private_helper_first()
    a, b = load(text, entry="helper"), load(text, entry="forward")
    assert len({a.sha256, b.sha256, sha256_text(text)}) == 3
    assert load(text, entry="helper").sha256 == a.sha256
    single = (SAMPLES / "matmul.mlir").read_text()
    assert load(single).sha256 == load(single, entry="forward").sha256 == sha256_text(single)


def test_one_public_function_first_is_the_entry_without_asking():
    prog = load(matmul(16) + add(16, "helper", private=True), name="p.mlir")
    assert prog.func_name == "forward" and [o.name for o in prog.ops] == ["linalg.matmul", "linalg.fill"]


# ----------------------------------------------------------------------------------------------
def test_op_count_limit():
    assert len(load(chain(MAX_OPS), name="c.mlir").ops) == MAX_OPS
    with pytest.raises(LoadError, match=f"{MAX_OPS + 1} linalg ops, more than the {MAX_OPS}"):
        load(chain(MAX_OPS + 1), name="c.mlir")


def test_expected_baseline_time_refuses_or_notes():
    for path in SAMPLE_FILES:
        assert measurement_note(load_file(str(path)), path.name) is None
    note = measurement_note(load(matmul(2048), name="mm.mlir"), "mm.mlir")
    assert note and "mm.mlir" in note and "17.2 GFLOP" in note and "10 of them" in note and "\n" not in note
    note = measurement_note(load(chain(MAX_OPS), name="c.mlir"), "c.mlir")
    assert note and f"compiling its {MAX_OPS} linalg ops" in note
    with pytest.raises(LoadError, match="limit for measuring"):
        measurement_note(load(matmul(4096), name="mm.mlir"), "mm.mlir")


def test_program_round_trips_through_the_loader_protocol():
    from mlir_rl_tui.engine.ir.program import Program

    for path in SAMPLE_FILES + [TORCH / "resnet_block.mlir"]:
        prog = load_file(str(path))
        again = Program.from_json(prog.to_json(), prog.text)
        again.path = prog.path
        assert again == prog


def test_export_of_an_entry_tags_and_transforms_only_that_function(engine, tmp_path):
    """export.replayable parses in the loader; mlir-opt replays it to the worker's IR, in @helper only."""
    import subprocess

    from mlir_rl_tui.engine import parse
    from mlir_rl_tui.engine.ir.export import replayable, strip_transforms

    prog = load(private_helper_first(), name="h.mlir", entry="helper")
    sched = parse("op0: T(4,8) V")
    text = replayable(prog, sched)
    payload = text[:text.index("transform.named_sequence")]
    assert payload.count('rl.op = "op0"') == 1 and payload.index('rl.op = "op0"') < payload.index("@forward")
    path = tmp_path / "replay.mlir"
    path.write_text(text)
    mlir_opt = mlir_opt_path()
    out = subprocess.run([mlir_opt, "--transform-interpreter", str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    status, ir_text = engine.transformed_ir(prog, sched)
    assert status == "ok" and strip_transforms(out.stdout) == strip_transforms(ir_text)
    assert "vector." in ir_text[:ir_text.index("@forward")] and "vector." not in ir_text[ir_text.index("@forward"):]
