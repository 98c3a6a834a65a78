#!/usr/bin/env python3
"""layers_check.py - the folders of src/ include each other along the read path, never in a cycle.

Usage: layers_check.py SRC_DIR        check the tree (exit 1 with the offending includes)
       layers_check.py --selftest     check that a cycle and a layer inversion are caught

Every `#include "folder/file.h"` of a file in src/<dir>/ is an edge dir -> folder. The test fails
on any cycle between folders, and on an edge that goes down the read path's layers
(docs/architecture.md): util < trace < model < analyze < export < cli, with the plugin's own
stack abi < core < gpu, metrics < range < record < plugin beside them (they may use trace, the
format they write).
A folder that is not listed here also fails: place it in LAYERS first.
"""
import os
import re
import sys
import tempfile

LAYERS = {"util": 0, "abi": 0, "trace": 1, "core": 2, "gpu": 3, "metrics": 3, "range": 4, "record": 5,
          "plugin": 6, "model": 2, "analyze": 3, "export": 4, "cli": 5}
# folders that must not use each other although their layers would allow it: the plugin side
# (core, gpu, metrics, record, plugin) and the read side above trace
APART = {("core", "util"), ("gpu", "util"), ("metrics", "util"), ("record", "util"), ("plugin", "util"),
         ("gpu", "metrics"), ("metrics", "model"), ("metrics", "export"), ("metrics", "cli"),
         ("core", "model"), ("gpu", "model"), ("record", "model"), ("plugin", "model"),
         ("record", "analyze"), ("plugin", "analyze"), ("plugin", "export"), ("plugin", "cli"),
         ("range", "util"), ("range", "metrics"), ("range", "model"), ("range", "analyze"),
         ("range", "export"), ("range", "cli"), ("record", "export"), ("record", "cli")}
INC = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def edges(src):
    out = {}
    for d in sorted(os.listdir(src)):
        p = os.path.join(src, d)
        if not os.path.isdir(p):
            continue
        for root, _, files in os.walk(p):
            for f in files:
                if not f.endswith((".c", ".h")):
                    continue
                fp = os.path.join(root, f)
                with open(fp, encoding="utf-8", errors="replace") as fh:
                    for t in INC.findall(fh.read()):
                        if t != d:
                            out.setdefault((d, t), os.path.relpath(fp, src))
    return out


def cycle(graph):
    """a cycle of folders as a list, or None"""
    state, stack = {}, []

    def dfs(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if not state.get(m):
                c = dfs(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if not state.get(n):
            c = dfs(n)
            if c:
                return c
    return None


def check(src):
    e = edges(src)
    graph, bad = {}, []
    for (a, b), where in sorted(e.items()):
        graph.setdefault(a, set()).add(b)
        if a not in LAYERS or b not in LAYERS:
            bad.append("%s -> %s (%s): folder not in tests/layers_check.py LAYERS" % (a, b, where))
        elif LAYERS[b] >= LAYERS[a] or (a, b) in APART or (b, a) in APART:
            bad.append("%s -> %s (%s): against the read path's layers" % (a, b, where))
    c = cycle(graph)
    if c:
        bad.append("include cycle: " + " -> ".join(c))
    return bad, e


def selftest():
    with tempfile.TemporaryDirectory() as t:
        def put(path, text):
            os.makedirs(os.path.dirname(os.path.join(t, path)), exist_ok=True)
            with open(os.path.join(t, path), "w") as f:
                f.write(text)
        put("util/a.h", "")
        put("model/m.h", '#include "util/a.h"\n')
        put("analyze/x.c", '#include "model/m.h"\n')
        bad, _ = check(t)
        assert not bad, bad
        put("model/m.c", '#include "analyze/x.h"\n')  # model -> analyze: a cycle and an inversion
        bad, _ = check(t)
        assert any("cycle" in b for b in bad), bad
        assert any("model -> analyze" in b for b in bad), bad
    print("layers selftest: ok")


def main():
    if sys.argv[1:] == ["--selftest"]:
        selftest()
        return 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad, e = check(sys.argv[1])
    for b in bad:
        print("layers: " + b)
    if bad:
        return 1
    print("layers: ok (%d folder edges, no cycle)" % len({k for k in e}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
