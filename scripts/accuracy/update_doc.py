#!/usr/bin/env python3
"""Regenerates the measured tables of docs/accuracy.md from memest_validate_stacks.

    python3 scripts/accuracy/update_doc.py [path/to/memest_validate_stacks]

The validator (tests/calibration/validate_stacks.cpp, a CTest test) runs every public and
project measurement of tests/data/measured/ through the library and prints Markdown tables;
this script puts its output between the markers of docs/accuracy.md, so the document always
shows what the test checks. Exits non-zero when the validator fails.
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "accuracy.md"
BEGIN = "<!-- begin: memest_validate_stacks output -->"
END = "<!-- end: memest_validate_stacks output -->"


def main() -> int:
    exe = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "tests" / "memest_validate_stacks")
    run = subprocess.run([exe, str(ROOT / "tests" / "data" / "measured")], capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        return run.returncode
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        sys.stderr.write(f"{DOC}: markers missing\n")
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + BEGIN + "\n\n" + run.stdout.strip() + "\n\n" + END + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
