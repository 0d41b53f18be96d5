"""`evaluate --rows FILE`: each finished row kept as it finishes, a stopped evaluation resumed without measuring
again what it had (agent.evaluate.RowsFile), and a rows file of another evaluation refused in one line."""

from __future__ import annotations

import json

import pytest
from conftest import SAMPLES

from mlir_rl_tui.agent.evaluate import RowsError, RowsFile, file_sha256

SETTINGS = {"policy_sha256": "abc", "hill_budgets": [50, 100], "seed": 0, "rounds": 3, "torch": True}


def _row(path: str, speedup: float) -> dict:
    return {"program": path, "sha256": file_sha256(path), "policy": speedup}


def test_rows_are_kept_line_by_line_and_read_back(tmp_path):
    prog = tmp_path / "a.mlir"
    prog.write_text("module {}\n")
    f = str(tmp_path / "rows.jsonl")
    rows = RowsFile(f, SETTINGS)
    assert rows.get(str(prog)) is None
    rows.add(_row(str(prog), 2.5))
    assert json.loads(open(f).readline())["format"] == RowsFile.FORMAT
    assert RowsFile(f, SETTINGS).get(str(prog))["policy"] == 2.5
    prog.write_text("module { }\n")  # another program at the same path: measured again
    assert RowsFile(f, SETTINGS).get(str(prog)) is None


def test_a_row_cut_by_a_kill_is_dropped_and_the_file_stays_appendable(tmp_path):
    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text("module {}\n")
    b.write_text("module {}\n\n")
    f = tmp_path / "rows.jsonl"
    RowsFile(str(f), SETTINGS).add(_row(str(a), 2.0))
    f.write_text(f.read_text() + '{"program": "' + str(b))  # the writer killed mid-line
    rows = RowsFile(str(f), SETTINGS)
    assert rows.get(str(a))["policy"] == 2.0 and rows.get(str(b)) is None
    rows.add(_row(str(b), 3.0))
    again = RowsFile(str(f), SETTINGS)
    assert again.get(str(a))["policy"] == 2.0 and again.get(str(b))["policy"] == 3.0


def test_another_evaluations_file_or_garbage_is_one_line(tmp_path):
    f = str(tmp_path / "rows.jsonl")
    RowsFile(f, SETTINGS)
    with pytest.raises(RowsError, match=r"another evaluation \(hill_budgets \[50, 100\] there, \[50\] now\)"):
        RowsFile(f, {**SETTINGS, "hill_budgets": [50]})
    # a setting only one side has (several policies, --only-differing) is a difference too, either way round
    more = {**SETTINGS, "other_policies_sha256": ["def"], "only_differing": True}
    g = str(tmp_path / "more.jsonl")
    RowsFile(g, more)
    with pytest.raises(RowsError, match=r"other_policies_sha256 \['def'\] there, None now"):
        RowsFile(g, SETTINGS)
    with pytest.raises(RowsError, match=r"only_differing None there, True now"):
        RowsFile(f, {**SETTINGS, "only_differing": True})
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("not json\n{}\n")
    with pytest.raises(RowsError, match="line 1 is not JSON"):
        RowsFile(str(garbage), SETTINGS)
    garbage.write_text('{"rows": 1}\n')
    with pytest.raises(RowsError, match="no 'mlir-rl-tui evaluate rows 1' header"):
        RowsFile(str(garbage), SETTINGS)
    for later in ("[1]", '{"policy": 2.0}'):  # a good header, then JSON that is not a row
        garbage.write_text(open(f).read() + later + "\n" + '{"program": "x.mlir"}\n')
        with pytest.raises(RowsError, match="line 2 is not a row"):
            RowsFile(str(garbage), SETTINGS)


def _untrained_policy(tmp_path) -> str:
    import torch

    from mlir_rl_tui.agent.policy import ActorCritic, save

    torch.manual_seed(0)
    path = str(tmp_path / "untrained.pt")
    save(ActorCritic(), path)
    return path


def test_evaluate_resumes_from_its_rows_file(tmp_path, cache_dir, capsys):
    """Real MLIR: a stopped evaluation (its rows file cut after the first program) measures only the second."""
    from mlir_rl_tui.commands import main

    ckpt = _untrained_policy(tmp_path)
    files = [str(SAMPLES / "relu.mlir"), str(SAMPLES / "add.mlir")]
    rows = tmp_path / "rows.jsonl"
    args = ["evaluate", "--programs", *files, "--policy", ckpt, "--no-search", "--no-torch", "--rounds", "1",
            "--runs", "3", "--json", "--rows", str(rows)]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)["programs"]
    lines = rows.read_text().splitlines()
    assert len(lines) == 3 and [json.loads(x)["program"] for x in lines[1:]] == files
    kept = {**json.loads(lines[1]), "policy": 123.0}  # marked, to tell a row read back from one measured again
    rows.write_text(lines[0] + "\n" + json.dumps(kept) + "\n")  # stopped while measuring add.mlir
    assert main(args) == 0
    cap = capsys.readouterr()
    again = json.loads(cap.out)
    assert "1 of 2 programs already in" in cap.err
    assert again["programs"][0] == kept and again["programs"][0]["policy_runs"] == first[0]["policy_runs"]
    assert again["programs"][1]["program"] == files[1] and again["programs"][1]["policy"] != 123.0
    assert again["gmean"]["programs"] == 2  # the summary counts the row read back like the one measured
    assert again["gmean"]["policy"] == pytest.approx((123.0 * again["programs"][1]["policy"]) ** 0.5)
    assert len(rows.read_text().splitlines()) == 3
    assert main([*args[:-1], str(rows), "--rounds", "2"]) == 2  # other settings: refused, the file kept
    assert "holds rows of another evaluation (rounds 1 there, 2 now)" in capsys.readouterr().err
    assert len(rows.read_text().splitlines()) == 3


def test_the_summary_of_several_policies_against_hand_computed_values():
    """agent.evaluate.summarize with policy B: per-program ratios to the first policy (a failure left out, an
    untimed program counted 1.0), their spread, the programs more than 5% apart, the schedules in common, and
    B's own losses; the geometric means leave out the untimed program."""
    import math

    from mlir_rl_tui.agent.evaluate import summarize

    def row(name, a, b, same=False, **kw):
        return {"program": f"/p/{name}.mlir", "policy": a, "policy_B": b, "policy_schedule": "x",
                "policy_B_schedule": "x" if same else "y", "policy_status": "ok" if a else "crash",
                "policy_B_status": "ok" if b else "crash", "policy_B_below_baseline": not b or b < 0.95, **kw}

    rows = [row("p1", 2.0, 2.2), row("p2", 4.0, 3.0), row("p3", 1.5, 1.5, same=True), row("p4", 1.0, None),
            {"program": "/p/p5.mlir", "policy_schedule": "x", "policy_B_schedule": "x", "timed": False}]
    s = summarize(rows, [], n_policies=2)
    logs = [math.log(1.1), math.log(0.75), 0.0, 0.0]  # p1, p2, p3; p4 failed (left out); p5 untimed (1.0)
    assert s["policy_B_over_policy"] == pytest.approx(math.exp(sum(logs) / 4))
    mean = sum(logs) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 3)
    assert s["policy_B_over_policy_spread"] == pytest.approx(math.exp(sd))
    assert (s["policy_B_ahead"], s["policy_B_behind"], s["policy_B_same_schedule"]) == (1, 1, 2)
    assert s["policy"] == pytest.approx((2.0 * 4.0 * 1.5 * 1.0) ** 0.25)  # the untimed p5 is in no gmean
    assert s["policy_B"] == pytest.approx((2.2 * 3.0 * 1.5) ** (1 / 3))
    assert (s["policy_B_failed"], s["policy_B_below_baseline"], s["policy_B_below_baseline_programs"]) == \
        (1, 1, ["p4.mlir"])
    assert s["not_timed"] == 1 and s["programs"] == 5 and s["policy_failed"] == 0
