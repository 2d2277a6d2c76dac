#!/usr/bin/env python3
"""The import graph of a crate's modules and its cycles.

Usage: tools/module_cycles.py [SRC_DIR] [--split] [-v]

An edge A -> B is a path into module B named in A's files: `crate::B...`, `super::...` and
`self::...` paths (resolved from the module the file, or the inline `mod` block, stands for)
and the items of `use crate::{..}`/`use super::{..}` lists (comments and string literals
dropped; tests included). Each top-level module (`src/X.rs` or `src/X/`) is a node; with
`--split`, each module one level down is a node of its own (`engine::cpu`, for `src/engine/cpu.rs`
or everything under `src/engine/cpu/`; the directory's `mod.rs` is `engine`). Prints the strongly
connected components of more than one node; `-v` also prints every node's edges.

The agent's layering rules (runtime over engines over probe machinery over FFI) are checked by
the `layers` test of crates/agent; this tool draws the graph of any crate.
"""
import os
import re
import sys

args = [a for a in sys.argv[1:] if not a.startswith("-")]
root = args[0] if args else "crates/agent/src"
split = "--split" in sys.argv


def strip(src):
    """The source without comments, string and char literals (each left as a blank)."""
    out, i, n = [], 0, len(src)
    ident = lambda k: k >= 0 and (src[k].isalnum() or src[k] == "_")
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            i = src.find("\n", i)
            i = n if i < 0 else i
        elif src.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                depth += src.startswith("/*", i) - src.startswith("*/", i)
                i += 2 if src.startswith(("/*", "*/"), i) else 1
            out.append(" ")
        elif c in "rb" and not ident(i - 1) and re.match(r'(?:br|r)#*"', src[i:]):
            m = re.match(r'(?:br|r)(#*)"', src[i:])
            end = src.find('"' + m.group(1), i + m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and src[i] != '"':
                i += 2 if src[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(?:\\.[^']*|[^'\\])'", src[i:]):
            i += re.match(r"'(?:\\.[^']*|[^'\\])'", src[i:]).end()
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


# Every file's module path: src/a/mod.rs and src/a.rs are [a], src/a/b.rs is [a, b].
files = {}
for dirpath, _, names in os.walk(root):
    for f in names:
        if not f.endswith(".rs"):
            continue
        rel = os.path.relpath(os.path.join(dirpath, f), root).removesuffix(".rs").split(os.sep)
        if rel[-1] in ("mod", "lib", "main"):
            rel = rel[:-1]
        files[tuple(rel)] = strip(open(os.path.join(dirpath, f)).read())

modules = set(files)
PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)")


def inline_modules(path, src):
    """(start, end, module path) of each inline `mod name { .. }` block of a file."""
    blocks = []
    for m in re.finditer(r"\bmod\s+([a-z_][a-z0-9_]*)\s*\{", src):
        depth, i = 1, m.end()
        while i < len(src) and depth:
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            i += 1
        blocks.append((m.start(), i, path + (m.group(1),)))
    return blocks


def expand(prefix, body):
    """The paths a `use prefix::{body}` list names (nested lists expanded)."""
    out, depth, item = [], 0, ""
    for ch in body + ",":
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            item = item.strip()
            if item:
                head, _, rest = item.partition("::{")
                if rest:
                    out += expand(prefix + "::" + head, rest[:-1])
                else:
                    out.append(prefix + "::" + item.split(" as ")[0].strip())
            item = ""
        else:
            item += ch
    return out


def resolve(path, here):
    """The module `path` (`crate::a::b::f`, `super::x`) names, seen from module `here`."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    else:
        base, rest = here, parts
        while rest and rest[0] in ("super", "self"):
            base = base[:-1] if rest[0] == "super" else base
            rest = rest[1:]
    target = base
    for p in rest:
        if base + (p,) in known:
            base = base + (p,)
            target = base
        else:
            break
    return target


known = set(modules)
for path, src in files.items():
    for _, _, inner in inline_modules(path, src):
        known.add(inner)


def node(module):
    if not module:
        return None
    return "::".join(module[:2]) if split else module[0]


edges = {}
for path, src in files.items():
    blocks = inline_modules(path, src)
    here_of = lambda pos: max(
        (b for b in blocks if b[0] <= pos < b[1]), key=lambda b: b[0], default=(0, 0, path)
    )[2]
    named = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)(?:::[A-Za-z_0-9]+)*)::\{", src):
        depth, i = 1, m.end()
        while i < len(src) and depth:
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            i += 1
        named += [(m.start(), p) for p in expand(m.group(1), src[m.end() : i - 1])]
    named += [(m.start(), m.group(1) + m.group(2)) for m in PATH.finditer(src) if m.group(2) != "::{"]
    a = node(path)
    if a is None:
        continue
    edges.setdefault(a, set())
    for pos, p in named:
        b = node(resolve(p, here_of(pos)))
        if b is not None and b != a:
            edges[a].add(b)
    # A module directory's `mod.rs` reaches the submodules it declares.
    if split and len(path) == 1:
        for sub in re.findall(r"\bmod\s+([a-z_][a-z0-9_]*)\s*;", src) + re.findall(
            r"=>\s*([a-z_][a-z0-9_]*)::[A-Z]", src
        ):
            if path + (sub,) in modules:
                edges[a].add(node(path + (sub,)))
for b in {b for bs in edges.values() for b in bs}:
    edges.setdefault(b, set())

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
print(f"{len(edges)} modules")
for c in components:
    if len(c) > 1:
        print(f"cycle of {len(c)}: {' '.join(sorted(c))}")
if "-v" in sys.argv:
    for m in sorted(edges):
        print(m, "->", " ".join(sorted(edges[m])))
