"""Bad options and arguments are one line on stderr with exit status 2, naming the cause, and most of them
are refused while the command line is read (nothing is measured here): non-finite times, counts under 1,
choices, shapes with a zero dimension, checkpoint and trace paths, files of the wrong kind; argparse's own
errors are one line too."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

from mlir_rl_tui.commands import build_parser, main

ROOT = pathlib.Path(__file__).resolve().parent.parent
MATMUL = str(ROOT / "samples" / "matmul.mlir")


def one_line(capsys, argv: list[str]) -> str:
    """The one stderr line of `mlir-rl-tui ARGV`, which must exit with status 2 and print nothing on stdout."""
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's errors exit from the parser
        code = e.code
    out = capsys.readouterr()
    assert code == 2, (code, out.err)
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.err and "internal error" not in out.err, out.err
    assert out.out == ""
    return lines[0]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch) -> None:
    """A cache folder of the test's own (subprocesses inherit it); nothing here measures, so no roofline."""
    monkeypatch.setenv("MLIR_RL_TUI_CACHE", str(tmp_path / "cache"))


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mlir_rl_tui", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    """A folder, random bytes, and a zip that is not a torch checkpoint."""
    folder = tmp_path / "adir"
    folder.mkdir()
    rand = tmp_path / "random.bin"
    rand.write_bytes(os.urandom(4096).replace(b"\n", b"\n\n") + b"\n")
    notckpt = tmp_path / "notckpt.pt"
    with zipfile.ZipFile(notckpt, "w") as z:
        z.writestr("a/data.pkl", b"not a pickle")
    return {"dir": str(folder), "random": str(rand), "notckpt": str(notckpt), "tmp": str(tmp_path)}


# 1. -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["apply", MATMUL, "--schedule", "", "--runs", "1", "--max-seconds", "inf"],
    ["apply", MATMUL, "--max-seconds", "1e400"],
    ["optimize", MATMUL, "--max-seconds", "nan"],
    ["tune", "add", "--minutes", "inf", "-o", "x.so"],
], ids=["apply-inf", "apply-1e400", "optimize-nan", "tune-inf"])
def test_a_time_must_be_finite(capsys, argv):
    cmd, opt = argv[0], next(a for a in argv if a in ("--max-seconds", "--minutes"))
    line = one_line(capsys, argv)
    assert line.startswith(f"mlir-rl-tui {cmd}: error: argument {opt}: ") and "is not a finite number of" in line


def test_a_huge_finite_limit_waits_without_overflow():
    """--max-seconds 1e300 is finite: its timer waits (1e9 s at most) instead of dying in its thread."""
    import time

    from mlir_rl_tui.cli.options import Deadline

    with Deadline(1e300) as limit:
        time.sleep(0.2)
        assert limit._timer is not None and limit._timer.is_alive() and not limit.cancel.is_set()


# 2. -----------------------------------------------------------------------------------------------
COUNTS = [
    ["apply", MATMUL, "--runs", "0"], ["apply", MATMUL, "--runs", "-5"],
    ["search", MATMUL, "--budget", "0"], ["search", MATMUL, "--runs", "-5"],
    ["replay", "t.jsonl", "--runs", "0"], ["optimize", MATMUL, "--runs", "0"],
    ["dataset", "generate", "--out", "d", "--n", "0"], ["dataset", "generate", "--out", "d", "--runs", "-1"],
    ["dataset", "measure", "d", "--budget", "0"], ["dataset", "measure", "d", "--runs", "-5"],
    ["evaluate", "--programs", "matmul", "--budget", "-5"], ["evaluate", "--programs", "matmul", "--budget", "50", "0"],
    ["evaluate", "--programs", "matmul", "--rounds", "-1"], ["evaluate", "--programs", "matmul", "--runs", "0"],
    ["costmodel", "train", "--members", "0"], ["costmodel", "train", "--epochs", "-1"],
    ["train", "--iterations", "0"], ["train", "--recipe", "default", "--members", "0"],
    ["train", "--recipe", "default", "--limit", "0"], ["doctor", "--repeats", "0"],
    ["ensemble", "out.pt", "a.pt", "--member", "0"],
]


@pytest.mark.parametrize("argv", COUNTS, ids=lambda a: "-".join(w for w in a if w != MATMUL))
def test_a_count_is_at_least_one(capsys, argv):
    opt = next(a for a in reversed(argv) if a.startswith("--"))
    prog = "mlir-rl-tui " + " ".join(argv[:2] if argv[0] in ("dataset", "costmodel") else argv[:1])
    line = one_line(capsys, argv)
    assert line.startswith(f"{prog}: error: argument {opt}: ") and "is not a positive whole number" in line, line
    assert line.endswith(f"({prog} --help)")


def test_counts_of_one_and_a_negative_seed_are_accepted():
    args = build_parser("evaluate").parse_args(["evaluate", "--programs", "m", "--budget", "1", "2", "--rounds", "1"])
    assert args.budget == [1, 2] and args.rounds == 1
    assert build_parser("train").parse_args(["train", "--seed", "-1", "--iterations", "1"]).seed == -1


# 3. -----------------------------------------------------------------------------------------------
def test_evaluate_split_is_a_choice(capsys):
    line = one_line(capsys, ["evaluate", "--programs", "matmul", "--split", "nosuch"])
    assert "argument --split: invalid choice: 'nosuch'" in line and "'train', 'eval', 'all'" in line
    assert build_parser("evaluate").parse_args(["evaluate", "--programs", "m", "--split", "all"]).split == "all"


# 4. -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, dim", [
    (["import", "m.py:M", "--input", "0x4"], 0),
    (["import", "m.py:M", "--input=-4x4"], -4),
    (["tune", "m.py:M", "--input", "4x0", "-o", "x.so"], 0),
], ids=["import-0x4", "import--4x4", "tune-4x0"])
def test_an_input_shape_has_no_dimension_under_one(capsys, argv, dim):
    line = one_line(capsys, argv)
    assert f"dimension {dim}; every dimension must be at least 1" in line, line


# 5. -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["policy-missing", "policy-random", "record-dir", "record-no-folder",
                                  "lesson-record-dir", "record-not-a-trace"])
def test_the_app_checks_its_files_before_it_starts(files, case):
    tmp = files["tmp"]
    args, words = {
        "policy-missing": ([MATMUL, "--policy", f"{tmp}/missing.pt"], "missing.pt: no such policy checkpoint"),
        "policy-random": ([MATMUL, "--policy", files["random"]], "not a torch zip file"),
        "record-dir": ([MATMUL, "--record", files["dir"]], "adir: is a folder"),
        "record-no-folder": ([MATMUL, "--record", f"{tmp}/nodir/t.jsonl"], "no such folder"),
        "lesson-record-dir": (["lesson", "matmul", "--record", files["dir"]], "adir: is a folder"),
        "record-not-a-trace": ([MATMUL, "--record", files["random"]], "exists and is not a trace"),
    }[case]
    before = open(files["random"], "rb").read()
    r = run(*args, timeout=30)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and words in lines[0], r.stderr
    assert open(files["random"], "rb").read() == before  # nothing appended to, or cut from, another file


# 6. -----------------------------------------------------------------------------------------------
def test_a_binary_lesson_is_not_a_lesson(capsys, files):
    line = one_line(capsys, ["lesson", files["random"]])
    assert line == f"mlir-rl-tui: error: {files['random']}: not a lesson (not UTF-8 text; a lesson is a TOML file)"


# 7. -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["optimize", MATMUL, "--policy", "{notckpt}"], "{notckpt}: not a PyTorch checkpoint (a zip without the records"),
    (["optimize", MATMUL, "--policy", "{dir}"], "{dir}: a directory, not a checkpoint file"),
    (["search", MATMUL, "--model", "{dir}"], "{dir}: a directory, not a checkpoint file"),
    (["evaluate", "--programs", "matmul", "--policy", "{notckpt}"], "{notckpt}: not a PyTorch checkpoint"),
], ids=["optimize-zip", "optimize-dir", "search-dir", "evaluate-zip"])
def test_a_checkpoint_option_names_what_the_file_is(capsys, files, argv, words):
    line = one_line(capsys, [a.format(**files) for a in argv])
    assert line.startswith("mlir-rl-tui: error: ") and words.format(**files) in line, line


@pytest.mark.parametrize("which, words", [("notckpt", "not a PyTorch checkpoint (a zip without the records torch "
                                                      "writes: data.pkl, version)"),
                                          ("dir", "a directory, not a checkpoint file")])
def test_the_checkpoint_reader_names_what_the_file_is(capsys, files, which, words):
    """convert-checkpoint and ensemble read their input files with agent.checkpoint's reader."""
    line = one_line(capsys, ["convert-checkpoint", files[which], f"{files['tmp']}/new.pt"])
    assert line == f"mlir-rl-tui: error: {files[which]}: {words}", line


# 8. -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, prog, words", [
    (["apply"], "mlir-rl-tui apply", "the following arguments are required: FILE"),
    (["apply", MATMUL, "--runs"], "mlir-rl-tui apply", "argument --runs: expected one argument"),
    (["search", MATMUL, "--method", "nosuch"], "mlir-rl-tui search", "argument --method: invalid choice: 'nosuch'"),
    (["apply", MATMUL, "--bogus"], "mlir-rl-tui apply", "unrecognized arguments: --bogus"),
    (["--bogus"], "mlir-rl-tui", "unrecognized arguments: --bogus"),
    (["dataset", "nosuch"], "mlir-rl-tui dataset", "argument ACTION: invalid choice: 'nosuch'"),
    (["dataset", "export", "--programs", "a.mlir", "keep.gz"], "mlir-rl-tui dataset export",
     "the following arguments are required: FILE"),
    (["dataset", "generate", "--out", "d", "--bogus"], "mlir-rl-tui dataset generate", "unrecognized arguments"),
    (["costmodel", "eval", "--split", "x"], "mlir-rl-tui costmodel eval", "argument --split: invalid choice: 'x'"),
], ids=lambda a: a if isinstance(a, str) else None)
def test_argparse_errors_are_one_line_with_the_help_to_read(capsys, argv, prog, words):
    line = one_line(capsys, argv)
    assert line.startswith(f"{prog}: error: {words}") and line.endswith(f"({prog} --help)"), line


# 9. -----------------------------------------------------------------------------------------------
def test_dataset_export_usage_shows_file_first(capsys):
    with pytest.raises(SystemExit) as e:
        main(["dataset", "export", "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("usage: mlir-rl-tui dataset export [-h] FILE --programs PROGRAM")
    args = build_parser("dataset").parse_args(["dataset", "export", "keep.gz", "--programs", "a.mlir", "b"])
    assert args.file == "keep.gz" and args.programs == ["a.mlir", "b"]


# 10. ----------------------------------------------------------------------------------------------
def test_import_of_a_directory_says_so(capsys, files):
    for extra in ([], ["--input", "4"]):
        line = one_line(capsys, ["import", f"{files['dir']}:M", *extra])
        assert line == f"mlir-rl-tui: error: {files['dir']}: a directory, not a Python file (FILE.py:NAME)"


def test_tune_of_a_missing_module_file_says_so_before_asking_for_input(capsys, files):
    tmp = files["tmp"]
    line = one_line(capsys, ["tune", f"{tmp}/missing.py:M", "-o", f"{tmp}/x.so"])
    assert line == f"mlir-rl-tui: error: {tmp}/missing.py: no such file"


def test_samples_to_a_file_that_is_neither_a_folder_nor_mlir(capsys, files):
    line = one_line(capsys, ["samples", "matmul", "-o", files["random"]])
    assert "neither a folder nor a .mlir file" in line and "several" not in line
    assert "not a folder (several samples go into a folder)" in one_line(
        capsys, ["samples", "matmul", "add", "-o", files["random"]])


def test_costmodel_cache_that_is_a_file(capsys, files):
    line = one_line(capsys, ["costmodel", "eval", "--cache", files["random"], "--programs", "matmul"])
    assert line == f"mlir-rl-tui: error: --cache {files['random']}: is a file, not a folder"


def test_replay_of_random_bytes_is_not_a_trace(capsys, files):
    line = one_line(capsys, ["replay", files["random"]])
    assert line == f"mlir-rl-tui: error: {files['random']}: not a trace (no line of it is a trace record)"


def test_tuning_db_show_takes_no_file_and_an_import_of_only_refused_lines_fails(capsys, files):
    from mlir_rl_tui.engine.store.tuning_db import Record, TuningDB

    tmp = files["tmp"]
    db = f"{tmp}/a.sqlite"
    source = TuningDB(db)
    source.add(Record("m", "w1", "T(8) V", 2.0, "relu 4096", {"name": "linalg.generic"}, "sha"))
    assert "tuning-db show takes no FILE" in one_line(capsys, ["tuning-db", "show", f"{tmp}/x.json", "--db", db])
    source.export(f"{tmp}/x.jsonl")
    head, *rows = open(f"{tmp}/x.jsonl").read().splitlines()
    with open(f"{tmp}/x.jsonl", "w") as f:  # every record tampered with: its checksum no longer matches
        f.write("\n".join([head, *(r.replace("2.0", "0.2") for r in rows)]) + "\n")
    line = one_line(capsys, ["tuning-db", "import", f"{tmp}/x.jsonl", "--db", f"{tmp}/b.sqlite"])
    assert "none of its 1 lines is a record" in line and "nothing imported" in line
