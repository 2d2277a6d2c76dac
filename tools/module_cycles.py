#!/usr/bin/env python3
"""The import graph of a crate's modules and its cycles.

Usage: tools/module_cycles.py [SRC_DIR] [--split] [-v]

An edge A -> B is a `crate::B` path or a `use crate::{.., B, ..}` item in A's files (comments
dropped; tests included). Each top-level module (`src/X.rs` or `src/X/`) is a node; with
`--split`, each file of a module directory is a node of its own (`engine::cpu`), its `super::`
uses pointing at the directory's `mod.rs`, and a `mod.rs` pointing at the submodules it
declares. Prints the strongly connected components of more than one node; `-v` also prints
every node's edges.
"""
import os
import re
import sys

args = [a for a in sys.argv[1:] if not a.startswith("-")]
root = args[0] if args else "crates/agent/src"
split = "--split" in sys.argv

mods = {}
for dirpath, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".rs") or f == "lib.rs":
            continue
        parts = os.path.relpath(os.path.join(dirpath, f), root).removesuffix(".rs").split(os.sep)
        node = parts[0]
        if split and len(parts) > 1:
            node = (parts[0] + "::" + parts[1]).removesuffix("::mod")
        mods[node] = mods.get(node, "") + open(os.path.join(dirpath, f)).read()

edges = {m: set() for m in mods}
for m, src in mods.items():
    src = re.sub(r"//[^\n]*", "", src)
    # A file's own unit tests (`use super::*;` there is the file itself, not its parent).
    src = src.replace("use super::*;", "")
    for top, sub in re.findall(r"crate::([a-z_]+)(?:::([a-z_]+))?", src):
        for cand in (top + "::" + sub, top):
            if cand in mods:
                if cand != m:
                    edges[m].add(cand)
                break
    for group in re.findall(r"use crate::\{([^}]*)\}", src, re.S):
        for t in re.findall(r"(?:^|[,\s{])([a-z_]+)", group):
            if t in mods and t != m:
                edges[m].add(t)
    if "::" in m:
        parent = m.split("::")[0]
        for t in re.findall(r"super::\{?([a-z_]+)", src) + [
            x for g in re.findall(r"use super::\{([^}]*)\}", src) for x in re.findall(r"[a-z_]+", g)
        ]:
            if parent + "::" + t in mods:
                edges[m].add(parent + "::" + t)
        if "super::" in src and parent in mods:
            edges[m].add(parent)
    if split:
        for sub in re.findall(r"(?:^|\n)\s*(?:pub )?mod ([a-z_]+);", src) + re.findall(
            r"=> ([a-z_]+)::[A-Z]", src
        ):
            if m + "::" + sub in mods:
                edges[m].add(m + "::" + sub)

# Tarjan's strongly connected components.
index, low, on_stack, stack, components = {}, {}, set(), [], []
sys.setrecursionlimit(10000)


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on_stack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        component = []
        while True:
            w = stack.pop()
            on_stack.discard(w)
            component.append(w)
            if w == v:
                break
        components.append(component)


for v in sorted(edges):
    if v not in index:
        visit(v)
print(f"{len(mods)} modules")
for c in components:
    if len(c) > 1:
        print(f"cycle of {len(c)}: {' '.join(sorted(c))}")
if "-v" in sys.argv:
    for m in sorted(edges):
        print(m, "->", " ".join(sorted(edges[m])))
