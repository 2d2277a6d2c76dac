#!/usr/bin/env python3
"""Writes BigMethod.java into the directory given (default: current): one method whose
code is 65514 bytes, 21 short of the JVM's limit, so most probes must skip it as too
large. Usage: gen_big_method.py [OUT_DIR]"""
import os
import sys

lines = ["public class BigMethod {", "    static int big(int x) {", "        int y = 0;"]
# Each statement compiles to 7 bytes (iload_1, iload_0, bipush/iconst, ixor, iadd, istore_1).
for i in range(9440):
    lines.append(f"        y += x ^ {i % 100};")
lines += ["        return y;", "    }", "}"]
out = sys.argv[1] if len(sys.argv) > 1 else "."
with open(os.path.join(out, "BigMethod.java"), "w") as f:
    f.write("\n".join(lines) + "\n")
