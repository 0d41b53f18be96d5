"""Safe by default (issue 16): no checkpoint, trace, manifest or cache file a user is handed can run code.

Checkpoints are tensors + JSON read with torch's weights-only unpickler (agent/checkpoint.py); the crafted
files here carry a real payload (`os.system` in a `__reduce__`), and each test checks that it never ran.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import sqlite3
from dataclasses import asdict

import numpy as np
import pytest
import torch
from conftest import ROOT, SAMPLES

from mlir_rl_tui.agent import checkpoint as ck
from mlir_rl_tui.agent.policy import ActorCritic, PolicyConfig
from mlir_rl_tui.commands import main
from mlir_rl_tui.engine.config import Limits
from mlir_rl_tui.engine.store import jsonl

SMALL = PolicyConfig(hidden=16, layers=1)  # a real ActorCritic, small enough to write in milliseconds


class Payload:
    """Unpickling this runs a shell command that creates `marker`."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _old_policy(model: ActorCritic, meta: dict) -> dict:
    """What agent.policy.save wrote before issue 16: one pickled dict."""
    return {"model": {k: v.half() for k, v in model.state_dict().items()}, "limits": asdict(model.limits),
            "policy": asdict(model.config), "meta": meta}


def _armed(path: pathlib.Path, marker: pathlib.Path) -> None:
    """Prove the crafted file really runs its payload when unpickled the unsafe way, then disarm the proof."""
    torch.load(path, weights_only=False)  # the unsafe load the product no longer does (test code only)
    assert marker.exists()
    marker.unlink()


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("mlir-rl-tui: error: ") and "\n" not in err and "Traceback" not in err
    return err


# ------------------------------------------------------------------------------------------------
def test_crafted_policy_is_refused_and_its_payload_never_runs(tmp_path, capsys):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save(_old_policy(ActorCritic(config=SMALL), {"note": Payload(marker)}), evil)
    _armed(evil, marker)
    assert main(["optimize", str(SAMPLES / "matmul.mlir"), "--policy", str(evil)]) == 2
    err = _one_line_error(capsys)
    assert "refused" in err and "posix.system" in err and str(evil) in err
    assert not marker.exists()
    # converting it does not run it either
    assert main(["convert-checkpoint", str(evil), str(tmp_path / "new.pt")]) == 2
    assert "refused" in _one_line_error(capsys)
    assert not marker.exists() and not (tmp_path / "new.pt").exists()


def test_crafted_ppo_resume_state_is_refused_and_its_payload_never_runs(tmp_path, capsys, cache_dir):
    marker = tmp_path / "pwned"
    out = tmp_path / "run"
    out.mkdir()
    model = ActorCritic(config=SMALL)
    opt = torch.optim.Adam(model.parameters())
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iteration": 1, "global_step": 4,
                "rng": np.random.default_rng(0).bit_generator.state, "torch_rng": torch.get_rng_state(),
                "args": {"seed": Payload(marker)}}, out / "last.pt")
    _armed(out / "last.pt", marker)
    assert main(["train", "--programs", str(SAMPLES / "relu.mlir"), "--out", str(out), "--resume",
                 "--iterations", "2"]) == 2
    err = _one_line_error(capsys)
    assert "refused" in err and "posix.system" in err and "last.pt" in err
    assert not marker.exists() and not (out / "progress.csv").exists()  # nothing trained either


def test_a_payload_inside_a_current_format_file_is_refused_too(tmp_path, capsys):
    """The format marker is no pass: the whole file goes through the weights-only unpickler."""
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save({"format": jsonl.CHECKPOINT, "version": ck.VERSION, "kind": "policy", "info": "{}",
                "tensors": {"x": torch.zeros(1)}, "extra": Payload(marker)}, evil)
    _armed(evil, marker)
    assert main(["optimize", str(SAMPLES / "matmul.mlir"), "--policy", str(evil)]) == 2
    assert "refused" in _one_line_error(capsys)
    assert not marker.exists()


# ------------------------------------------------------------------------------------------------
def test_an_older_checkpoint_gets_the_convert_command_and_converts(tmp_path, capsys, matmul):
    from mlir_rl_tui.agent.policy import load
    from mlir_rl_tui.agent.suggest import Policy
    from mlir_rl_tui.engine import Session

    torch.manual_seed(0)
    model = ActorCritic(Limits(max_vector_elements=512), SMALL)
    old, new = tmp_path / "old.pt", tmp_path / "new.pt"
    torch.save(_old_policy(model, {"trained_by": "bc", "loss": np.float64(0.25)}), old)
    assert main(["optimize", str(SAMPLES / "matmul.mlir"), "--policy", str(old)]) == 2
    err = _one_line_error(capsys)
    assert f"mlir-rl-tui convert-checkpoint {old} NEW.pt" in err and "older format" in err
    assert main(["convert-checkpoint", str(old), str(new), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "policy"
    loaded, meta = load(str(new))
    assert meta == {"trained_by": "bc", "loss": 0.25}
    assert loaded.limits == model.limits and loaded.config == model.config  # limits kept, not today's defaults
    for k, v in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[k], v.half().float()), k
    assert Policy(loaded).schedule(Session(matmul)).done
    assert main(["convert-checkpoint", str(new), str(tmp_path / "again.pt")]) == 2
    assert "already in the current checkpoint format" in _one_line_error(capsys)


def test_convert_help_says_it_unpickles_and_to_trust_the_file(capsys):
    with pytest.raises(SystemExit):
        main(["convert-checkpoint", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "unpickle" in text and "files you trust" in text


def test_shipped_policy_is_in_the_current_format():
    from mlir_rl_tui.agent.suggest import DEFAULT_CHECKPOINT, load_policy

    raw = torch.load(DEFAULT_CHECKPOINT, weights_only=True)
    assert raw["format"] == jsonl.CHECKPOINT and raw["version"] == ck.VERSION and raw["kind"] == "policy"
    assert {v.dtype for v in raw["tensors"].values()} == {torch.float16}  # kept small
    pol = load_policy()
    assert pol is not None and pol.model.limits == Limits()  # trained on the current action space (issue 14)
    if pol.meta["trained_by"] == "ensemble":  # cloned policies deciding together (agent.policy.Ensemble)
        members = pol.meta["members"]
        assert len(members) == len(pol.model.members) >= 2
        assert all(m["meta"]["trained_by"] == "bc" for m in members)
    else:
        assert pol.meta["trained_by"] == "bc"


# ------------------------------------------------------------------------------------------------
def _policy_file(tmp_path, name: str, info: dict | None = None, tensors: dict | None = None,
                 info_text: str | None = None, **fields) -> str:
    """A current-format policy file of the SMALL model, with one thing changed."""
    model = ActorCritic(config=SMALL)
    info = info if info is not None else {"limits": asdict(model.limits), "policy": asdict(model.config)}
    obj = {"format": jsonl.CHECKPOINT, "version": ck.VERSION, "kind": "policy", "info": info_text or json.dumps(info),
           "tensors": tensors if tensors is not None else model.state_dict(), **fields}
    path = tmp_path / name
    torch.save(obj, path)
    return str(path)


@pytest.mark.parametrize("case, expected", [
    ("text", "not a torch zip file"),
    ("newer", "newer than this mlir-rl-tui reads"),
    ("kind", "not a 'policy' one"),
    ("bad_json", "bad JSON"),
    ("huge_model", "bad policy config"),
    ("huge_limits", "bad limits"),
    ("unknown_field", "unknown field"),
    ("wrong_shapes", "do not match its limits and policy config"),
    ("not_tensors", "not a name -> tensor map"),
    ("too_large", "larger than a checkpoint may be"),
])
def test_unexpected_checkpoints_are_one_line_errors(tmp_path, capsys, monkeypatch, case, expected):
    small = asdict(SMALL)
    files = {
        "text": lambda: _write(tmp_path / "t.pt", "hello"),
        "newer": lambda: _policy_file(tmp_path, "n.pt", version=ck.VERSION + 1),
        "kind": lambda: _policy_file(tmp_path, "k.pt", kind="ppo-state"),
        "bad_json": lambda: _policy_file(tmp_path, "j.pt", info_text="{not json"),
        "huge_model": lambda: _policy_file(tmp_path, "h.pt", {"policy": {**small, "hidden": 1 << 20}}),
        "huge_limits": lambda: _policy_file(tmp_path, "l.pt", {"limits": {"n_loops": 100_000}}),
        "unknown_field": lambda: _policy_file(tmp_path, "u.pt", {"policy": {**small, "code": "x"}}),
        "wrong_shapes": lambda: _policy_file(tmp_path, "w.pt", {"policy": {**small, "hidden": 32}}),
        "not_tensors": lambda: _policy_file(tmp_path, "x.pt", tensors={"a": [1, 2]}),
        "too_large": lambda: _policy_file(tmp_path, "b.pt"),
    }
    if case == "too_large":
        monkeypatch.setattr(ck, "MAX_BYTES", 100)
    path = files[case]()
    assert main(["optimize", str(SAMPLES / "matmul.mlir"), "--policy", path]) == 2
    assert expected in _one_line_error(capsys)


def _write(path: pathlib.Path, text: str) -> str:
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------------------------------------
def test_ppo_resume_state_round_trips_without_pickle(tmp_path):
    """Weights, Adam's moments and hyper-parameters, both RNGs and the counters come back as they were."""
    from mlir_rl_tui.agent import ppo

    torch.manual_seed(0)
    model = ActorCritic(config=SMALL)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4, eps=1e-5)
    model(torch.ones(2, 2 * model.n_features))[1].sum().backward()
    opt.step()
    rng = np.random.default_rng(7)
    rng.random(3)
    path = str(tmp_path / "last.pt")
    ppo.save_state(path, model, opt, rng, 3, 42, 12.5, ppo.Args())
    rng_next, torch_next = rng.random(), torch.rand(1)

    state = ppo.load_state(path)
    assert state.model is not None and state.model.config == SMALL
    opt2 = torch.optim.Adam(state.model.parameters(), lr=1e-3, eps=1e-5)
    rng2 = np.random.default_rng(0)
    torch.manual_seed(123)
    assert state.restore(state.model, opt2, rng2) == (3, 42, 12.5)
    assert rng2.random() == rng_next and torch.equal(torch.rand(1), torch_next)
    a, b = opt.state_dict(), opt2.state_dict()
    assert a["param_groups"] == b["param_groups"]  # lr 3e-4 restored, betas a tuple again
    for pid, st in a["state"].items():
        for key, v in st.items():
            assert torch.equal(b["state"][pid][key], v), (pid, key)
    for k, v in model.state_dict().items():
        assert torch.equal(state.model.state_dict()[k], v), k


def test_older_ppo_resume_state_converts_and_restores(tmp_path, capsys):
    from mlir_rl_tui.agent import ppo

    model = ActorCritic(config=SMALL)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 2 * model.n_features))[1].sum().backward()
    opt.step()
    rng = np.random.default_rng(5)
    old, new = tmp_path / "last-old.pt", tmp_path / "last.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iteration": 2, "global_step": 9,
                "time_s": 1.0, "rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                "args": asdict(ppo.Args())}, old)
    with pytest.raises(ck.CheckpointError, match="convert-checkpoint"):
        ppo.load_state(str(old))
    assert main(["convert-checkpoint", str(old), str(new)]) == 0
    assert "ppo-state" in capsys.readouterr().out
    state = ppo.load_state(str(new))
    assert state.model is None  # as before: the run's --init (or default) model gets the weights
    fresh = ActorCritic(config=SMALL)
    opt2 = torch.optim.Adam(fresh.parameters())
    rng2 = np.random.default_rng(0)
    assert state.restore(fresh, opt2, rng2)[:2] == (2, 9)
    assert rng2.bit_generator.state == rng.bit_generator.state
    assert torch.equal(opt2.state_dict()["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    with pytest.raises(ck.CheckpointError, match="do not match"):  # the default-size model is not this one
        state.restore(ActorCritic(config=PolicyConfig(hidden=32, layers=1)), opt2, rng2)


# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content, expected", [
    ("{not json", "not a data set manifest"),
    ('{"programs": 3}', "no list of programs"),
    ('{"programs": [3]}', "program 0 of the manifest"),
    ('{"programs": [{"path": {"x": 1}}]}', "program 0 of the manifest"),
    ('[{"path": "a.mlir"}]', "no list of programs"),
    ("[" * 100_000, "nested too deeply"),
])
def test_bad_manifests_are_one_line_errors(tmp_path, capsys, content, expected):
    man = tmp_path / "manifest.json"
    man.write_text(content)
    assert main(["evaluate", "--programs", str(man), "--no-search", "--no-torch"]) == 2
    assert expected in _one_line_error(capsys)


def test_manifest_size_limit(tmp_path, monkeypatch):
    from mlir_rl_tui.engine import EngineError
    from mlir_rl_tui.engine.corpus import generator, programs

    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"programs": [{"path": "a.mlir", "split": "train"}] * 20}))
    monkeypatch.setattr(generator, "MAX_MANIFEST_BYTES", 100)
    with pytest.raises(EngineError, match="larger than"):
        programs.program_paths(str(man))
    with pytest.raises(EngineError, match="larger than"):
        generator.read_manifest(str(man))
    monkeypatch.setattr(generator, "MAX_MANIFEST_BYTES", 1 << 20)
    assert generator.read_manifest(str(man))["programs"][0]["abspath"] == str(tmp_path / "a.mlir")
    man.write_text('{"programs": [{"file": 1}]}')
    with pytest.raises(EngineError, match="not a data set manifest"):
        generator.read_manifest(str(man))


def test_trace_records_of_the_wrong_shape_are_bad_lines(tmp_path, capsys, monkeypatch):
    from mlir_rl_tui.engine import EngineError
    from mlir_rl_tui.engine.rl import trace as tr

    good = {"program": "p.mlir", "program_sha256": "ab", "op": "op0", "step": 0, "action": "NT"}
    lines = [json.dumps(good), "[1, 2]", json.dumps({**good, "op": 3}), json.dumps({**good, "step": "0"}),
             json.dumps({**good, "measurement": "fast"}), "[" * 100_000, "{not json"]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    t = tr.read_trace(str(path))
    assert len(t.records) == 1 and t.bad_lines == 6
    path.write_text("\n".join(lines[1:]) + "\n")
    assert main(["replay", str(path)]) == 2
    assert "not a trace (no line of it is a trace record)" in _one_line_error(capsys)
    monkeypatch.setattr(tr, "MAX_TRACE_BYTES", 10)
    with pytest.raises(EngineError, match="larger than a trace may be"):
        tr.read_trace(str(path))


def test_foreign_cache_rows_are_misses(tmp_path):
    from mlir_rl_tui.engine.store.cache import Cache

    c = Cache(str(tmp_path / "c.sqlite"))
    c.put("p", "s", "m", {"status": "ok"})
    assert c.get("p", "s", "m") == {"status": "ok"}
    db = sqlite3.connect(str(tmp_path / "c.sqlite"))
    for sched, row in [("list", "[1]"), ("blob", b"\x80\x04"), ("deep", "[" * 100_000), ("bad", "{x")]:
        db.execute("INSERT INTO measurements VALUES ('p', ?, 'm', ?, 'not a checksum', 0)", (sched, row))
    db.commit()
    db.close()
    assert [c.get("p", s, "m") for s in ("list", "blob", "deep", "bad")] == [None] * 4
    c.close()


# ------------------------------------------------------------------------------------------------
UNSAFE = [
    (r"weights_only\s*=\s*False", "weights_only=False"),
    (r"\bpickle\.(load|loads|Unpickler)\b", "pickle.load"),
    (r"\b(cPickle|dill|cloudpickle|joblib|shelve|marshal)\.load", "unpickling library"),
    (r"(?<![\w.])(eval|exec)\(", "bare eval/exec"),
    (r"allow_pickle\s*=\s*True", "numpy allow_pickle=True"),
    (r"\byaml\.(load|unsafe_load)\(", "yaml.load"),
]


def _unsafe_lines(text: str) -> list[str]:
    return [why for pattern, why in UNSAFE if re.search(pattern, text)]


def test_no_unsafe_loading_in_the_product_code():
    # the scanner itself: each pattern fires on the kind of line it is meant to catch, not on look-alikes
    assert _unsafe_lines("ck = torch.load(p, weights_only=False)") == ["weights_only=False"]
    assert _unsafe_lines("x = pickle.load(f)") == ["pickle.load"]
    assert _unsafe_lines("y = eval(text)") == ["bare eval/exec"]
    assert _unsafe_lines("model.eval(); loader.exec_module(m); np.load(p, allow_pickle=False)") == []
    found = []
    files = [p for d in ("agent", "engine", "mlir_rl_tui") for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 30
    for path in files:
        text = path.read_text()
        for why in _unsafe_lines(text):
            found.append(f"{path.relative_to(ROOT)}: {why}")
        # checkpoints are read in one place, weights only (`mlir_rl_tui.torch.load` is not torch's)
        for call in re.finditer(r"(?<![\w.])torch\.load\(", text):
            if path != ROOT / "agent" / "checkpoint.py":
                found.append(f"{path.relative_to(ROOT)}: torch.load outside agent/checkpoint.py")
            if "weights_only=True" not in text[call.end(): text.index(")", call.end())]:
                found.append(f"{path.relative_to(ROOT)}: torch.load without weights_only=True")
    assert found == []


@pytest.mark.parametrize("decl", ["func.func private @abort()", "llvm.func @abort()"])
def test_a_program_that_would_call_outside_code_is_refused(tmp_path, decl):
    """`func.call @abort()` to an external declaration aborted the worker before: now the loader refuses it."""
    from mlir_rl_tui.engine import load_file
    from mlir_rl_tui.engine.errors import LoadError

    p = tmp_path / "evil.mlir"
    p.write_text(decl + """
func.func @forward(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tensor.empty() : tensor<4xf32>
  %1 = linalg.add ins(%arg0, %arg0 : tensor<4xf32>, tensor<4xf32>) outs(%0 : tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
""")
    with pytest.raises(LoadError, match="outside the file"):
        load_file(str(p))
