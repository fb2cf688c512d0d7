#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The code layout's two rules, checked on the tree (README, "Code layout").

  check-layout.py loops SOURCE_ROOT BUILD_ROOT   no two files include or call each other in a loop
  check-layout.py lengths SOURCE_ROOT            no function in daemon/ is longer than 80 lines
  check-layout.py self-test                      both checks find what they must on made-up trees

loops: the nodes are the files of daemon/, bench/ and tools/ (tests/ may do as it likes), a .c
and its own header counting as one: daemon/STAGE/NAME.c with daemon/STAGE/include/peltd/NAME.h,
or NAME.c with NAME.h in the same folder. An edge is an #include, or a call of (a reference to) a
name that only the other node's object defines, read with nm from the objects in BUILD_ROOT.
Every strongly connected set of more than one node is a loop; each is printed with its edges.

lengths: a function runs from the line with its name to its closing brace at column 0.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

MAX_LINES = 80
SCANNED = ("daemon", "bench", "tools")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def source_files(src):
    for top in SCANNED:
        for dirpath, dirnames, filenames in os.walk(os.path.join(src, top)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, f), src)


def node_of(path):
    """The node a file belongs to: its .c's path without the extension, headers folded in."""
    stem, _ = os.path.splitext(path)
    d, name = os.path.split(stem)
    if path.endswith(".h") and os.path.basename(d) == "peltd" and os.path.basename(os.path.dirname(d)) == "include":
        stage = os.path.dirname(os.path.dirname(d))
        return os.path.join(stage, name)
    return stem


def resolve_include(src, including, name, headers_by_peltd):
    if name.startswith("peltd/"):
        return headers_by_peltd.get(name[len("peltd/"):])
    cand = os.path.normpath(os.path.join(os.path.dirname(including), name))
    if os.path.exists(os.path.join(src, cand)):
        return cand
    return None  # generated (build-config.h, the BPF skeleton) or a system header


def include_edges(src, files):
    headers = {}
    for f in files:
        parts = f.split(os.sep)
        if f.endswith(".h") and len(parts) >= 3 and parts[-2] == "peltd" and parts[-3] == "include":
            headers.setdefault(parts[-1], []).append(f)
    dup = {k: v for k, v in headers.items() if len(v) > 1}
    if dup:
        for k, v in dup.items():
            print(f"peltd/{k} is ambiguous: {', '.join(v)}")
        sys.exit(1)
    by_name = {k: v[0] for k, v in headers.items()}
    edges = []
    for f in files:
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            target = resolve_include(src, f, name, by_name)
            if target:
                edges.append((node_of(f), node_of(target), f"#include \"{name}\" in {f}"))
    return edges


def objects(build, src):
    """(object path, source path relative to the source root) for the objects of SCANNED's files.

    From meson's compile_commands.json: it names each object's source (meson flattens subfolders
    into object names, cmd_main.c.o, so a path alone would not tell).
    """
    src = os.path.realpath(src)
    with open(os.path.join(build, "compile_commands.json")) as fh:
        commands = json.load(fh)
    for c in commands:
        source = os.path.relpath(os.path.realpath(os.path.join(c["directory"], c["file"])), src)
        obj = os.path.join(c["directory"], c["output"])
        if source.split(os.sep)[0] in SCANNED and source.endswith(".c") and os.path.exists(obj):
            yield obj, source


def call_edges(src, build):
    defines, uses = {}, {}
    for obj, source in objects(build, src):
        if not os.path.exists(os.path.join(src, source)):
            continue
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        node = node_of(source)
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBRV":
                defines.setdefault(f[2], set()).add(node)
            elif len(f) == 2 and f[0] == "U":
                uses.setdefault(node, set()).add(f[1])
    edges = []
    for node, names in uses.items():
        for name in names:
            owners = defines.get(name, set())
            if len(owners) == 1:
                (owner,) = owners
                edges.append((node, owner, f"calls {name}"))
    return edges, len(defines)


def strongly_connected(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_loops(src, build, quiet=False):
    files = list(source_files(src))
    edges = [e for e in include_edges(src, files) if e[0] != e[1]]
    calls, n_defined = call_edges(src, build) if build else ([], 0)
    edges += [e for e in calls if e[0] != e[1]]
    graph = {}
    for a, b, _ in edges:
        graph.setdefault(a, set()).add(b)
    loops = strongly_connected(graph)
    for comp in loops:
        print("loop: " + " <-> ".join(comp))
        members = set(comp)
        for a, b, why in sorted(set(edges)):
            if a in members and b in members:
                print(f"    {a} -> {b}: {why}")
    if not quiet:
        nodes = {n for e in edges for n in e[:2]}
        print(f"{len(files)} files, {len(nodes)} nodes, {len(edges)} edges "
              f"({len(calls)} from the objects' {n_defined} defined names): {len(loops)} loops")
    return len(loops)


DEFINITION = re.compile(r"^[A-Za-z_][^;]*\(")


def long_functions(path, limit=MAX_LINES):
    out = []
    start = name = None
    in_body = False
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    for i, line in enumerate(lines, 1):
        if not in_body:
            if start is None and DEFINITION.match(line) and not line.rstrip().endswith(";") \
                    and not line.startswith(("typedef", "struct", "enum", "#")):
                start, name = i, line
            if start is not None:
                if line.rstrip().endswith(";"):
                    start = None  # a prototype over several lines
                elif line.rstrip().endswith("{"):
                    in_body = True
        elif line.startswith("}"):
            if i - start + 1 > limit:
                m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", name)
                out.append((start, i - start + 1, m.group(1) if m else name))
            start, in_body = None, False
    return out


def check_lengths(src, quiet=False):
    found = checked = 0
    for f in source_files(src):
        if not f.startswith("daemon" + os.sep) or not f.endswith(".c"):
            continue
        checked += 1
        for line, n, name in long_functions(os.path.join(src, f)):
            print(f"{f}:{line}: {name}() is {n} lines long (at most {MAX_LINES})")
            found += 1
    if not quiet:
        print(f"{checked} files of daemon/: {found} functions over {MAX_LINES} lines")
    return found


def write(root, path, text):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as fh:
        fh.write(text)


def self_test():
    """Both checks on trees made here: each finds exactly what was planted."""
    failures = 0
    with tempfile.TemporaryDirectory(prefix="peltd-test-layout-") as t:
        # a.c includes b.h, b.c includes a.h (stage headers), c.h is included by both: one loop.
        write(t, "daemon/x/include/peltd/a.h", "#pragma once\n")
        write(t, "daemon/x/include/peltd/b.h", "#pragma once\n")
        write(t, "daemon/x/c.h", "#pragma once\n")
        write(t, "daemon/x/a.c", '#include "peltd/a.h"\n#include "peltd/b.h"\n#include "c.h"\n')
        write(t, "daemon/x/b.c", '#include "peltd/b.h"\n#include "peltd/a.h"\n')
        write(t, "tools/d.c", '#include "../daemon/x/c.h"\n')
        if check_loops(t, None, quiet=True) != 1:
            print("self-test: the planted include loop a <-> b was not found as one loop")
            failures += 1
        os.remove(os.path.join(t, "daemon/x/b.c"))
        write(t, "daemon/x/b.c", '#include "peltd/b.h"\n')
        if check_loops(t, None, quiet=True) != 0:
            print("self-test: a tree without loops was said to have one")
            failures += 1
        body = "".join(f"        x += {i};\n" for i in range(78))
        write(t, "daemon/x/long.c",
              "static int fits(int x) {\n" + body[: -len("        x += 77;\n")] + "}\n\n"
              "int too_long(int x,\n             int y) {\n" + body + "}\n")
        got = long_functions(os.path.join(t, "daemon/x/long.c"))
        if [(n, name) for _, n, name in got] != [(81, "too_long")]:
            print(f"self-test: the 81-line function was not the one found: {got}")
            failures += 1
    print("self-test: " + ("failed" if failures else "both checks find what was planted"))
    return failures


def main(argv):
    if len(argv) == 4 and argv[1] == "loops":
        return 1 if check_loops(argv[2], argv[3]) else 0
    if len(argv) == 3 and argv[1] == "lengths":
        return 1 if check_lengths(argv[2]) else 0
    if len(argv) == 2 and argv[1] == "self-test":
        return 1 if self_test() else 0
    print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
