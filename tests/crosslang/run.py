#!/usr/bin/env python3
"""Cross-language golden test: the same requests (requests.json) answered by every front end must
give identical responses — every number, verdict, selection, error code, field and message — and
each case's expectation must hold.

    run.py --front-end c=./runner --front-end cli="memest request" --front-end python="py runner.py"

A front end is NAME=COMMAND. COMMAND gets the cases file (lines "name<TAB>request") as its last
argument and prints "name<TAB>response" lines; the special form NAME=stdin:COMMAND runs COMMAND
once per case with the request on stdin (the CLI's `memest request`). The first front end is the
reference (the C library). Responses are compared as parsed JSON, numbers as doubles.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


ROOT = os.path.dirname(os.path.dirname(HERE))


def inline_launch_files(request):
    """An import request's files given as {"name", "text_from": a path from the repository
    root} get the file's text, so every front end is sent the same document."""
    if not isinstance(request, dict) or not isinstance(request.get("files"), list):
        return
    for f in request["files"]:
        if isinstance(f, dict) and "text_from" in f:
            with open(os.path.join(ROOT, f.pop("text_from")), encoding="utf-8") as src:
                f["text"] = src.read()


def load_cases(path):
    doc = json.load(open(path, encoding="utf-8"))
    cases = doc["cases"]
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    for c in cases:
        inline_launch_files(c["request"])
        r = c["request"]
        c["text"] = r if isinstance(r, str) else json.dumps(r, separators=(",", ":"))
        assert "\t" not in c["text"] and "\n" not in c["text"]
    return cases


def run_front_end(command, cases, cases_file):
    if command.startswith("stdin:"):
        argv = shlex.split(command[len("stdin:"):])
        out = {}
        for c in cases:
            p = subprocess.run(argv, input=c["text"], capture_output=True, text=True)
            if p.returncode not in (0, 2):
                raise RuntimeError(f"{command} exited {p.returncode} on {c['name']}: {p.stderr}")
            out[c["name"]] = json.loads(p.stdout)
            ok = out[c["name"]].get("ok")
            assert (p.returncode == 0) == bool(ok), f"{c['name']}: exit {p.returncode} vs ok={ok}"
        return out
    argv = shlex.split(command) + [cases_file]
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{command} exited {p.returncode}:\n{p.stderr}{p.stdout[-2000:]}")
    out = {}
    for line in p.stdout.splitlines():
        if "\t" not in line:
            continue
        name, _, text = line.partition("\t")
        out[name] = json.loads(text)
    return out


def first_difference(a, b, path=""):
    if type(a) != type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                   and not isinstance(a, bool) and not isinstance(b, bool)):
        return f"{path or '/'}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}/{k}: only in {'second' if k not in a else 'first'}"
            d = first_difference(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        return None if float(a) == float(b) else f"{path}: {a!r} vs {b!r}"
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", default=os.path.join(HERE, "requests.json"))
    ap.add_argument("--front-end", action="append", required=True, metavar="NAME=COMMAND")
    args = ap.parse_args()

    cases = load_cases(args.requests)
    modes = {c["request"].get("mode") for c in cases if isinstance(c["request"], dict) and c["expect"].get("ok")}
    invalid = [c for c in cases if not c["expect"].get("ok")]
    assert len(cases) >= 20 and len(invalid) >= 5, "need >= 20 requests, >= 5 invalid"
    assert {"pretrain", "model_states", "finetune"} <= modes, modes

    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        cases_file = os.path.join(tmp, "cases.tsv")
        with open(cases_file, "w", encoding="utf-8") as f:
            for c in cases:
                f.write(f"{c['name']}\t{c['text']}\n")
        answers = {}
        for spec in args.front_end:
            name, _, command = spec.partition("=")
            answers[name] = run_front_end(command, cases, cases_file)

    names = list(answers)
    reference = names[0]
    for c in cases:
        ref = answers[reference].get(c["name"])
        if ref is None:
            failures.append(f"{reference}: no answer for {c['name']}")
            continue
        exp = c["expect"]
        if exp.get("ok"):
            if ref.get("ok") is not True:
                failures.append(f"{c['name']}: expected ok, got {ref.get('error')}")
            # further expectations: response fields with their values ("peak_verdict": "oom")
            # "stage_layers": each stage's layers; "layout_has": fields of the layout (a search's:
            # its first result's) with their values; "training_has": of the training echo;
            # "stack_has": of the first stage's stack; "stage_has": of the first stage;
            # "model_has": of the response's model echo
            for key, value in exp.items():
                if key == "stage_layers":
                    got = [s.get("layers") for s in ref.get("stages") or []]
                elif key == "layout_has":
                    lay = ref.get("layout") or ((ref.get("results") or [{}])[0]).get("layout") or {}
                    got = {k: lay.get(k) for k in value}
                elif key == "training_has":  # fields of the response's training echo
                    got = {k: (ref.get("training") or {}).get(k) for k in value}
                elif key == "stack_has":  # fields of the first stage's training-stack parts
                    st = ((ref.get("stages") or [{}])[0]).get("stack") or {}
                    got = {k: st.get(k) for k in value}
                elif key == "stage_has":  # fields of the first stage
                    st = (ref.get("stages") or [{}])[0]
                    got = {k: st.get(k) for k in value}
                elif key == "model_has":  # fields of the response's model echo
                    got = {k: (ref.get("model") or {}).get(k) for k in value}
                else:
                    got = ref.get(key)
                if key != "ok" and got != value:
                    failures.append(f"{c['name']}: expected {key} = {value!r}, got {got!r}")
        else:
            err = ref.get("error") or {}
            if ref.get("ok") is not False or err.get("code") != exp["code"] or err.get("field") != exp["field"]:
                failures.append(f"{c['name']}: expected {exp}, got {err or 'ok'}")
        for other in names[1:]:
            got = answers[other].get(c["name"])
            if got is None:
                failures.append(f"{other}: no answer for {c['name']}")
                continue
            d = first_difference(ref, got)
            if d:
                failures.append(f"{c['name']}: {reference} and {other} differ at {d}")

    for f in failures:
        print("FAIL", f)
    ok_cases = len(cases) - len(invalid)
    print(f"crosslang: {len(cases)} requests ({ok_cases} valid, {len(invalid)} invalid) x "
          f"{len(names)} front ends ({', '.join(names)}): "
          + ("identical" if not failures else f"{len(failures)} failures"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
