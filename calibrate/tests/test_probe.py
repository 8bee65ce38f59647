"""calibrate/probe.py without a GPU: --help and --plan need no PyTorch, and without PyTorch the
probe says so and exits 2. PyTorch is hidden from the child process by a stand-in package whose
import fails, so these tests mean the same on a machine that has it."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
PROBE = HERE.parent / "probe.py"


def run_probe(args, tmp_path, env_extra=None):
    blocked = tmp_path / "no-torch"
    (blocked / "torch").mkdir(parents=True, exist_ok=True)
    (blocked / "torch" / "__init__.py").write_text('raise ImportError("No module named torch (hidden by the test)")\n')
    env = dict(os.environ, PYTHONPATH=str(blocked), PYTHONDONTWRITEBYTECODE="1")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, str(PROBE), *args], capture_output=True, text=True,
                          env=env, check=False, timeout=120)


def test_help_without_torch(tmp_path):
    done = run_probe(["--help"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "usage: probe.py" in done.stdout
    for flag in ("--profile", "--seq", "--micro-batch", "--checkpointing", "--steps", "--plan"):
        assert flag in done.stdout


def test_without_torch_exits_2(tmp_path):
    out = tmp_path / "profile.json"
    done = run_probe(["-o", str(out)], tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probe.py: PyTorch is not installed")
    assert not out.exists()


@pytest.mark.parametrize("args", [["--seq", "0"], ["--heads", "5"], ["--checkpointing", "maybe"],
                                  ["--steps", "0"]])
def test_bad_arguments_exit_2(tmp_path, args):
    done = run_probe(args, tmp_path)
    assert done.returncode == 2
    assert "probe.py: error:" in done.stderr


def test_plan_through_memest(tmp_path):
    command = os.environ.get("MEMEST_CLI")
    if not command or not os.path.exists(command):
        pytest.skip("no memest command (MEMEST_CLI)")
    profile = HERE.parent / "examples" / "h100-sxm-80gb.example.json"
    done = run_probe(["--plan", "--profile", str(profile), "--memest-cli", command,
                      "--seq", "1024,2048", "--micro-batch", "1"], tmp_path)
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert len(plan["runs"]) == 4  # 2 sequence lengths x checkpointing off / on
    by_key = {(r["seq_len"], r["checkpointing"]): r for r in plan["runs"]}
    # longer sequences hold more; checkpointing holds less
    assert by_key[(2048, False)]["modelled_bytes"] > by_key[(1024, False)]["modelled_bytes"]
    assert by_key[(2048, True)]["modelled_bytes"] < by_key[(2048, False)]["modelled_bytes"]
    # the model memest counted: 12 layers of 2048 wide, vocabulary 32000, untied head
    h, f, v, kv = 2048, 5632, 32000, 512
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * f + 2 * h
    assert plan["runs"][0]["num_parameters"] == 12 * per_layer + 2 * v * h + h
