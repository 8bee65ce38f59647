#!/usr/bin/env python3
"""Architecture check of libmemest/src: the folders must not include each other in a cycle, and
the JSON layer (libmemest/src/json/) must not call the public C API (memest.h's functions): the
C API calls into the core and the JSON layer, never the other way round.

Reads every `#include "folder/file"` line of libmemest/src (includes of files outside src/,
such as memest/memest.h, are not edges), builds the graph folder -> included folder, and fails
(exit 1) printing a cycle when there is one; then fails printing file:line for every
`memest_xxx(` call under src/json/ of a function memest.h declares (comments and string
literals are ignored).

Usage: check_includes.py [SRC_DIR [PUBLIC_HEADER]]   (defaults: this repository's)
       check_includes.py --self-test                 (checks that both checks can fail)
Registered as a CTest test ("arch: ...")."""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCE_EXTENSIONS = (".cpp", ".hpp", ".h", ".cc", ".c", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
CALL = re.compile(r"\b(memest_[a-z_]+)\s*\(")
DECLARED = re.compile(r"\bMEMEST_API\b[^;{]*?\b(memest_[a-z_0-9]+)\s*\(", re.S)


def sources(src):
    for dirpath, _, files in os.walk(src):
        for name in sorted(files):
            if name.endswith(SOURCE_EXTENSIONS):
                yield os.path.join(dirpath, name)


def folder_of(src, path):
    rel = os.path.relpath(path, src)
    return rel.split(os.sep)[0] if os.sep in rel else "."


def include_graph(src):
    """{folder: {included folder: (file, line)}} for includes that resolve under src/."""
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    graph = {f: {} for f in folders}
    for path in sources(src):
        here = folder_of(src, path)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            if "/" not in target:
                continue  # same folder
            there = target.split("/")[0]
            if there not in folders or there == here:
                continue  # not a folder of src/ (memest/memest.h), or the same folder
            line = text.count("\n", 0, m.start()) + 1
            graph.setdefault(here, {}).setdefault(there, (os.path.relpath(path, src), line))
    return graph


def find_cycle(graph):
    """A list of folders [a, b, ..., a] forming a cycle, or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = {n: WHITE for n in graph}
    stack = []

    def visit(n):
        colour[n] = GREY
        stack.append(n)
        for m in sorted(graph.get(n, {})):
            if colour.get(m, WHITE) == GREY:
                return stack[stack.index(m):] + [m]
            if colour.get(m, WHITE) == WHITE:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        colour[n] = BLACK
        return None

    for n in sorted(graph):
        if colour[n] == WHITE:
            found = visit(n)
            if found:
                return found
    return None


def strip_comments_and_strings(text):
    """The text with comments and string/char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def public_functions(header):
    with open(header, encoding="utf-8") as f:
        return set(DECLARED.findall(strip_comments_and_strings(f.read())))


def c_api_calls(json_dir, functions):
    """[(file, line, name)] of calls to the public C API under json_dir."""
    found = []
    if not os.path.isdir(json_dir):
        return found
    for path in sources(json_dir):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_comments_and_strings(f.read())
        for m in CALL.finditer(text):
            if m.group(1) in functions:
                found.append((path, text.count("\n", 0, m.start()) + 1, m.group(1)))
    return found


def check(src, header, out=sys.stdout):
    ok = True
    graph = include_graph(src)
    edges = sum(len(v) for v in graph.values())
    cycle = find_cycle(graph)
    if cycle:
        ok = False
        print("include cycle between folders of %s: %s" % (src, " -> ".join(cycle)), file=out)
        for a, b in zip(cycle, cycle[1:]):
            file, line = graph[a][b]
            print("  %s -> %s: %s:%d" % (a, b, file, line), file=out)
    else:
        print("no include cycle: %d folders, %d folder edges" % (len(graph), edges), file=out)
    functions = public_functions(header)
    if not functions:
        print("no MEMEST_API function found in %s" % header, file=out)
        return False
    calls = c_api_calls(os.path.join(src, "json"), functions)
    for path, line, name in calls:
        ok = False
        print("%s:%d: the JSON layer calls the public C API (%s)" % (os.path.relpath(path, src), line, name),
              file=out)
    if not calls:
        print("json/ calls none of the %d public C API functions" % len(functions), file=out)
    return ok


def self_test():
    """Both checks must fail on trees built to fail, and pass on a clean one."""
    import io

    header = os.path.join(ROOT, "libmemest", "include", "memest", "memest.h")

    def tree(files):
        d = tempfile.mkdtemp(prefix="memest-arch-")
        for rel, text in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        return d

    clean = tree({"core/a.hpp": '#include "memest/memest.h"\n',
                  "json/j.cpp": '#include "core/a.hpp"\n// memest_request_json(x) in a comment\n'
                                'const char* s = "memest_pretrain(";\nint memest_local_helper(int);\n',
                  "capi/c.cpp": '#include "json/j.hpp"\n#include "core/a.hpp"\n'})
    cyclic = tree({"a/x.hpp": '#include "b/y.hpp"\n', "b/y.hpp": '#include "c/z.hpp"\n',
                   "c/z.hpp": '#include "a/x.hpp"\n'})
    calling = tree({"core/a.hpp": "", "json/j.cpp": '#include "core/a.hpp"\nvoid f() { memest_pretrain (0, 0, 0, 0, 0); }\n'})
    results = []
    for name, src, expected, must_print in [("clean", clean, True, "no include cycle"),
                                            ("cycle", cyclic, False, "a -> b -> c -> a"),
                                            ("C API call", calling, False, "j.cpp:2: the JSON layer calls the public C API (memest_pretrain)")]:
        buf = io.StringIO()
        got = check(src, header, buf)
        passed = got == expected and must_print in buf.getvalue()
        results.append(passed)
        print("self-test %-10s: %s" % (name, "ok" if passed else "FAILED\n" + buf.getvalue()))
    return all(results)


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return 0 if self_test() else 1
    src = argv[1] if len(argv) > 1 else os.path.join(ROOT, "libmemest", "src")
    header = argv[2] if len(argv) > 2 else os.path.join(ROOT, "libmemest", "include", "memest", "memest.h")
    return 0 if check(src, header) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
