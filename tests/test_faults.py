"""`ntdd faults`: which injected faults a notebook's tests catch, told as tables and exit codes."""

from __future__ import annotations

import json
import os
import re
import sys
import weakref
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, sha, write_notebook

from ntdd.commands.cli import main
from ntdd.faults import FAULTS

torch = pytest.importorskip("torch")

# A classifier trained in setup, with an optimizer: every fault applies to it.
CLASSIFIER = (
    "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
    "X = torch.randn(64, 4)\ny = (X[:, 0] > 0).long()\n"
    "model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.5)\n"
    "for _ in range(50):\n"
    "    opt.zero_grad()\n"
    "    nn.functional.cross_entropy(model(X), y).backward()\n"
    "    opt.step()"
)
MISSES = "# TEST: shape\nassert model(X).shape == (64, 2)"
CATCHES = {
    "nan": "from ntdd.torch import assert_finite\nassert_finite(model(X))",
    "scale": "assert model(X).abs().max() < 100",
    "labels": "assert (model(X).argmax(1) == y).float().mean() > 0.9",
    "lr0": "before = [p.detach().clone() for p in model.parameters()]\n"
    "opt.zero_grad()\nnn.functional.cross_entropy(model(X), y).backward()\nopt.step()\n"
    "assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))",
    "stale_grad": "opt.zero_grad()\nassert all(p.grad is None for p in model.parameters())",
}  # broadcast: y a column where it is made errors the training cell, as the bug does


def _moved_labels() -> int:
    """How many of CLASSIFIER's labels the labels fault's seeded permutation changes."""
    torch.manual_seed(0)
    y = (torch.randn(64, 4)[:, 0] > 0).long()
    return int((y[torch.randperm(64, generator=torch.Generator().manual_seed(0))] != y).sum())


CHANGED = {
    "nan": "X[0, 0] → nan",
    "scale": "model: 4 parameters ×1e4",
    "labels": f"y (64,) shuffled ({_moved_labels()} of 64 labels changed)",
    "lr0": "opt lr 0.5 → 0",
    "stale_grad": "opt.zero_grad() → a no-op",
}


SEEDS_ITSELF = (
    "runs: the notebook seeds itself (torch.manual_seed(0)): every run is the same under any "
    "seed, so each fault ran once at 1 and 2 torch threads, caught where its tests fail at both"
)


def table(
    notebook: str, fault: str, changed: str, verdict: str, rate: str, met: str, failed: str
) -> str:
    """The text report on one notebook and one fault, as `ntdd faults` prints it."""
    name, what = max(len("fault"), len(fault)), max(len("what changed"), len(changed))
    return (
        f"{notebook}\n{SEEDS_ITSELF}\n\n"
        f"{'fault':<{name}}  {'what changed':<{what}}  failed  p  caught by\n"
        f"{'-' * name}  {'-' * what}  ------  -  ---------\n"
        f"{fault:<{name}}  {changed:<{what}}  {failed:<6}  -  {verdict}\n\n"
        f"kill rate: {rate}\n\n"
        f"exit policy (every applicable fault caught): {met}\n"
    )


# The kill rule's runs of each (the notebook's training, then each test, at 1 and 2
# threads, the second from a new process): seconds each, in the slow tier. The rule
# itself is tested quickly in test_faults_kill_rule.py.
@pytest.mark.slow
@pytest.mark.parametrize("fault", list(CATCHES))
def test_each_new_fault_is_caught_by_a_test_that_checks_for_it_and_missed_otherwise(
    fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "catch.ipynb", [CLASSIFIER, f"# TEST: catches\n{CATCHES[fault]}"])
    write_notebook(tmp_path / "miss.ipynb", [CLASSIFIER, MISSES])
    assert main(["faults", "catch.ipynb", "--faults", fault]) == 0
    assert capsys.readouterr().out == table(
        "catch.ipynb",
        fault,
        CHANGED[fault],
        "test_catches",
        "1 of 1 applicable faults caught at α = 0.05 (100%)",
        "met",
        "2/2",
    )
    assert main(["faults", "miss.ipynb", "--faults", fault]) == 1
    suggestion = FAULTS[fault].suggestion.replace("`", "")
    assert capsys.readouterr().out == table(
        "miss.ipynb",
        fault,
        CHANGED[fault],
        f"NOT CAUGHT. Try: {suggestion}",
        "0 of 1 applicable faults caught at α = 0.05 (0%)",
        "NOT met",
        "0/2",
    )


@pytest.mark.slow
def test_a_fault_that_makes_setup_raise_is_caught_by_setup_only_if_a_test_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    check = "assert torch.isfinite(X).all(), 'NaN in the data'"
    write_notebook(tmp_path / "below.ipynb", [CLASSIFIER, MISSES, check, "# TEST: later\npass"])
    write_notebook(tmp_path / "last.ipynb", [CLASSIFIER, MISSES, check])
    write_notebook(tmp_path / "skipped.ipynb", [CLASSIFIER, MISSES, f"# NTDD: skip\n{check}"])
    assert main(["faults", "below.ipynb", "--faults", "nan"]) == 0
    out = capsys.readouterr().out
    by_setup = r"nan    X\[0, 0\] → nan  2/2     -  caught by setup "
    by_setup += r"\(setup cell \d raised AssertionError\)"
    assert re.search(by_setup + r": test_later\n", out), out  # numbered as the runtime numbers
    # Below the last test, the cell runs in the module's end test, as Run All runs it.
    assert main(["faults", "last.ipynb", "--faults", "nan"]) == 0
    out = capsys.readouterr().out
    assert re.search(by_setup + r": test_notebook_runs_to_the_end\n", out), out
    assert main(["faults", "skipped.ipynb", "--faults", "nan"]) == 1
    assert "nan    X[0, 0] → nan  0/2     -  NOT CAUGHT." in capsys.readouterr().out


@pytest.mark.slow
def test_the_json_report_has_every_fault_of_every_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "miss.ipynb", [CLASSIFIER, MISSES])
    assert main(["faults", "miss.ipynb", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (notebook,) = report["notebooks"]
    statuses = {f["name"]: f["status"] for f in notebook["faults"]}
    assert statuses == {  # a model made frozen, targets a column: setup raises, as the bugs would
        **dict.fromkeys(["shape", "dtype", "device", "detached", "broadcast"], "caught"),
        **dict.fromkeys(["unregistered", "nan", "scale", "labels"], "survived"),
        **dict.fromkeys(["lr0", "stale_grad"], "survived"),
        "mode": "not applicable",
    }
    assert notebook["baseline"] == {"test_shape": "passed"}
    assert (report["caught"], report["applicable"], report["exit_code"]) == (5, 11, 1)
    assert notebook["mode"] == "fork"


@pytest.mark.slow
def test_the_failure_modes_sample_catches_every_applicable_fault_as_the_docs_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "failure_modes.ipynb").write_bytes((SAMPLES / "failure_modes.ipynb").read_bytes())
    assert main(["faults", "failure_modes.ipynb"]) == 0
    out = capsys.readouterr().out
    page = (ROOT / "docs" / "faults.md").read_text(encoding="utf-8")
    shown = page.split("$ ntdd faults sample_notebooks/failure_modes.ipynb\n", 1)[1]
    shown = shown.split("```", 1)[0].replace(
        "sample_notebooks/failure_modes.ipynb", "failure_modes.ipynb"
    )
    assert out == shown
    assert (
        "labels        -" in out and "11 of 11 applicable faults caught at α = 0.05 (100%)" in out
    )


@pytest.mark.slow
def test_a_run_changes_no_file_writes_no_cache_and_leaves_no_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    noisy = "import os\nos.system('echo from a subprocess')\nprint('from a cell')"
    path = write_notebook(tmp_path / "nb.ipynb", [CLASSIFIER, noisy, MISSES + "\n" + noisy])
    before = {p: sha(p) for p in tmp_path.iterdir()}
    state = process_state()
    assert main(["faults", str(path), "--faults", "nan,lr0"]) == 1
    out, err = capfd.readouterr()
    assert "from a" not in out + err  # neither the clean run nor a child wrote to the terminal
    assert out.startswith(f"{path}\n{SEEDS_ITSELF}\n\nfault")
    assert {p: sha(p) for p in tmp_path.iterdir()} == before  # no cache, no file changed
    assert process_state() == state


def process_state() -> tuple[object, ...]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # pytest's
    return os.getcwd(), environ, list(sys.path), torch.get_num_threads()


@pytest.mark.slow
def test_a_notebook_without_torch_has_no_applicable_faults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb", ["values = [1, 2]", "# TEST\nassert sum(values) == 3"]
    )
    assert main(["faults", str(path), "--faults", "shape,lr0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    reasons = [f["reason"] for f in report["notebooks"][0]["faults"]]
    assert reasons == ["the notebook does not use torch"] * 2
    assert report["kill_rate"] is None and report["passed"] is True
    assert main(["faults", str(path)]) == 0  # one line, not a row per fault and 0/0
    assert capsys.readouterr().out == (
        f"{path}: no torch: no faults apply\n\nexit policy (every applicable fault caught): met\n"
    )


# The plugin setups a run may find: this suite's (PYTEST_PLUGINS names ntdd's plugin),
# autoloading, and plugins not autoloaded, with ntdd named by nothing or by `-p`.
PLUGIN_SETUPS = {
    "PYTEST_PLUGINS names it": {},
    "autoloaded": {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": None, "PYTEST_PLUGINS": None},
    "not autoloaded, named by nothing": {"PYTEST_PLUGINS": None},
    "not autoloaded, named by -p": {"PYTEST_PLUGINS": None, "PYTEST_ADDOPTS": "-p ntdd"},
}


def plugin_setup(monkeypatch: pytest.MonkeyPatch, setup: str) -> None:
    for name, value in PLUGIN_SETUPS[setup].items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


@pytest.mark.parametrize("setup", PLUGIN_SETUPS)
@pytest.mark.slow
def test_the_runs_have_ntdds_plugin_however_plugins_are_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], setup: str
) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", ["x = 1", "# TEST: one\nassert x == 1"])
    plugin_setup(monkeypatch, setup)
    assert main(["faults", str(path), "--faults", "scale", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notebooks"][0]["baseline"] == {"test_one": "passed"}


def test_bad_requests_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = write_notebook(tmp_path / "plain.ipynb", ["x = 1"])
    assert main(["faults", str(plain), "--faults", "nope,nan"]) == 2
    assert "unknown fault(s): nope; known: shape, dtype," in capsys.readouterr().err
    assert main(["faults", str(tmp_path / "missing.ipynb")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["faults", str(plain), "--min-kill-rate", "120%"])
    assert info.value.code == 2
    assert "expected a share from 0 to 1" in capsys.readouterr().err


def test_a_name_rebound_to_an_object_at_a_freed_objects_address_counts_as_rebound() -> None:
    """CPython gives a new object the address of one just freed: `ys = ys[perm]` can
    leave `ys` with its old id. The data fault then took `ys` for unchanged and never
    reached the new tensor (bigrams' `broadcast` survived 1 run in 5)."""
    from ntdd.faults.uses import _Held

    class Value:
        pass

    old, new = Value(), Value()
    at_the_old_address = _Held(id(new), weakref.ref(old))  # as a freed old object leaves it
    assert not at_the_old_address.holds(new)
    assert _Held.of(new).holds(new) and not _Held.of(old).holds(new)
    assert _Held.of(7).holds(7)  # no weak reference to an int: its id alone
