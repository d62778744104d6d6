#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""No circle of includes crosses a folder of src/.

    circles.py SRC_DIR

A module is a source file and its header (src/engine/transport/req.c
and req.h are the module engine/transport/req); module A uses module B when
A's .c or .h includes B's header.  Modules that use each other, directly
or around a circle, are one piece of design and belong in one folder: a
circle through two folders means neither folder can be read, built or
replaced without the other.  The layers tests prove that no include runs
upward between layers; this proves the same inside a layer, between its
folders.  Prints every strongly connected component of the module graph
that spans more than one folder and exits 1;
exits 0 and prints the number of modules and of circles (all inside one
folder) otherwise.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules(src):
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(root, f)
            name = os.path.relpath(path, src)[:-2]
            with open(path, encoding="utf-8", errors="replace") as fh:
                incs = INCLUDE.findall(fh.read())
            mods.setdefault(name, set()).update(
                i[:-2] for i in incs if i.endswith(".h"))
    return {m: {d for d in deps if d in mods and d != m}
            for m, deps in mods.items()}


def components(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                out.append(sorted(comp))
    return out


def main():
    src = sys.argv[1]
    graph = modules(src)
    comps = [c for c in components(graph) if len(c) > 1]
    crossing = [c for c in comps
                if len({os.path.dirname(m) for m in c}) > 1]
    for c in crossing:
        folders = sorted({os.path.dirname(m) for m in c})
        print("FAIL: a circle of includes through %s: %s"
              % (", ".join(folders), " ".join(c)))
    if crossing:
        return 1
    print("ok: %d modules; %d circles, each inside one folder (%s)"
          % (len(graph), len(comps),
             "; ".join("%s: %d modules" % (os.path.dirname(c[0]), len(c))
                       for c in comps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
