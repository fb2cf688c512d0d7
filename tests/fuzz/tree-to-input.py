#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Turns a sysfs-like tree into an input of fuzz-topology (the seeds in corpus/topology/).

Usage: tree-to-input.py TREE OUTPUT

The file table is read from fuzz-topology.c, so the two cannot disagree. Files the table does not
name are left out; content longer than 255 bytes becomes several records (the target appends).
"""
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
prefixes = {"CPU": "sys/devices/system/cpu/", "NODE": "sys/devices/system/node/"}
table = []
src = open(os.path.join(here, "fuzz-topology.c")).read()
body = src[src.index("} files[] = {"):]
body = body[:body.index("};")]
for m in re.finditer(r'\{ (?:(CPU|NODE) )?"([^"]*)", (\d) \}', body):
    table.append((prefixes.get(m.group(1), "") + m.group(2), int(m.group(3))))

patterns = []
for kind, (fmt, n) in enumerate(table):
    patterns.append((kind, n, re.compile("^" + re.escape(fmt).replace("\\#", "#").replace("#", "([0-9]+)") + "$")))

tree, output = sys.argv[1], sys.argv[2]
out = bytearray()

def walk(top):
    # Only where the table looks: TREE may be "/" (this machine).
    for sub in ("proc", "sys/devices/system/cpu", "sys/devices/system/node", "sys/devices/cpu_core", "sys/devices/cpu_atom"):
        if sub == "proc":
            if os.path.isfile(os.path.join(top, "proc/cpuinfo")):
                yield os.path.join(top, "proc"), [], ["cpuinfo"]
            continue
        for dirpath, dirnames, filenames in os.walk(os.path.join(top, sub)):
            dirnames.sort()
            yield dirpath, dirnames, sorted(filenames)


for dirpath, dirnames, filenames in walk(tree):
    for name in filenames:
        rel = os.path.relpath(os.path.join(dirpath, name), tree)
        for kind, n, pat in patterns:
            m = pat.match(rel)
            if not m:
                continue
            nums = [int(x) for x in m.groups()]
            if n == 1:
                a, b = nums[0] % 256, nums[0] // 256
            elif n == 2:
                a, b = nums
            else:
                a = b = 0
            if a > 255 or b > 255:
                break
            try:
                data = open(os.path.join(dirpath, name), "rb").read()
            except OSError:
                break
            chunks = [data[i:i + 255] for i in range(0, len(data), 255)] or [b""]
            for c in chunks:
                out += bytes([kind, a, b, len(c)]) + c
            break
open(output, "wb").write(out)
