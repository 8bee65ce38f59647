#!/usr/bin/env python3
"""Rewrites the measured-error part of docs/throughput.md from memest_validate_throughput's
output (the tables it prints as Markdown), between the validate_throughput markers.

    scripts/throughput/update_doc.py [build/tests/memest_validate_throughput]
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN = "<!-- validate_throughput: begin (scripts/throughput/update_doc.py writes this part) -->"
END = "<!-- validate_throughput: end -->"


def main():
    tool = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/tests/memest_validate_throughput")
    out = subprocess.run([tool], capture_output=True, text=True).stdout
    # from the first table to the closing verdict line, the tool's own words
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("fitted on all"))
    body = "\n".join(l for l in lines[start:] if not l.startswith("throughput validation"))
    doc_path = os.path.join(ROOT, "docs/throughput.md")
    doc = open(doc_path).read()
    i, j = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    open(doc_path, "w").write(doc[:i] + "\n```\n" + lines[0] + "\n```\n\n" + body.strip() + "\n" + doc[j:])


if __name__ == "__main__":
    main()
