#!/usr/bin/env python3
"""Reads every run of tests/data/launch/<ecosystem>/<run>/ with `memest request` mode "import"
and compares the request it makes with the hand-written one in expected.json: layout,
micro-batch, sequence, recompute, optimizer and adapter must match, and the peak must be within
3 %; a run expected to be refused must end in an error. Prints one line per run."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "--diff" else ROOT / "build-lead/bindings/cli/memest"
DATA = ROOT / "tests/data/launch"

# the request fields that must match (the list), with memest's defaults when absent
FIELDS = {
    "parallel.gpus": None, "parallel.tp": 1, "parallel.pp": 1, "parallel.cp": 1, "parallel.ep": 1,
    "parallel.vpp": 1, "parallel.zero": None,
    "training.micro_batch": 1, "training.seq_len": None, "training.recompute": "none",
    "training.recompute_every": 1, "training.optimizer": "adam", "training.framework": "megatron",
    "training.adapter.type": None, "training.adapter.rank": 8, "training.adapter.targets": None,
}


def get(d, path, default=None):
    for p in path.split("."):
        if not isinstance(d, dict) or p not in d:
            return default
        d = d[p]
    return d


def ask(request):
    out = subprocess.run([str(CLI), "request", "-"], input=json.dumps(request), capture_output=True, text=True)
    return json.loads(out.stdout)


def import_request(run_dir, exp):
    files = [{"name": f, "text": (run_dir / f).read_text()} for f in exp["files"]]
    req = {"mode": "import", "files": files}
    flags = exp.get("flags") or {}
    for k in ("gpu", "gpus", "seq_len"):
        if k in flags:
            req[k] = flags[k]
    if "seq" in flags:
        req["seq_len"] = flags["seq"]
    if "model" in flags:
        m = flags["model"]
        if isinstance(m, str) and m.endswith(".json"):
            p = (run_dir / m) if (run_dir / m).exists() else (DATA / m if (DATA / m).exists() else ROOT / m)
            m = json.loads(p.read_text())
        req["model"] = m
    return req


def flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and k not in ("model",):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def diff(name):
    run_dir = DATA / name
    exp = json.loads((run_dir / "expected.json").read_text())
    got = ask(import_request(run_dir, exp))
    if not got.get("ok"):
        print(got["error"]); return
    a, b = flatten(exp["request"]), flatten(got["request"])
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            print(f"{k}: want {json.dumps(a.get(k))[:200]} got {json.dumps(b.get(k))[:200]}  [{got['origins'].get(k)}]")
    for w in got["warnings"]:
        print("warning:", w)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--diff":
        diff(sys.argv[2]); return 0
    ok = bad = 0
    for exp_path in sorted(DATA.glob("*/*/expected.json")):
        run_dir = exp_path.parent
        exp = json.loads(exp_path.read_text())
        name = f"{run_dir.parent.name}/{run_dir.name}"
        got = ask(import_request(run_dir, exp))
        if exp.get("refused"):
            if got.get("ok"):
                print(f"FAIL {name}: expected a refusal, got a request"); bad += 1
            else:
                print(f"ok   {name}: refused: {got['error']['message'][:150]}"); ok += 1
            continue
        if not got.get("ok"):
            print(f"FAIL {name}: {got['error']['message'][:300]}"); bad += 1
            continue
        want = exp["request"]
        have = got["request"]
        diffs = []
        for f, d in FIELDS.items():
            a, b = get(want, f, d), get(have, f, d)
            if f == "parallel.zero" and a is None:
                continue
            if f == "training.adapter.targets" and isinstance(a, list) and isinstance(b, list):
                a, b = sorted(a), sorted(b)
            if a != b:
                diffs.append(f"{f}: want {a} got {b}")
        pw = ask(want)
        ph = ask(have)
        peak = ""
        if pw.get("ok") and ph.get("ok"):
            r = ph["peak_bytes"] / pw["peak_bytes"] - 1
            peak = f"peak {r*100:+.1f}%"
            if abs(r) > 0.03:
                diffs.append(peak)
        else:
            diffs.append("estimate: " + (ph.get("error") or pw.get("error") or {}).get("message", "")[:200])
        if diffs:
            print(f"FAIL {name}: " + "; ".join(diffs)); bad += 1
        else:
            print(f"ok   {name}: {peak}, {len(got['warnings'])} warnings"); ok += 1
    print(f"{ok} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
