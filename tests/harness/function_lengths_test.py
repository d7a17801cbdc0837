#!/usr/bin/env python3
"""tools/function_lengths.py on planted sources: an 81-line function is listed and fails, an
80-line one passes; braces inside comments, strings, raw strings and character literals do not
count; a constructor with a braced initializer, a member function and a function in a nested
namespace are found; a lambda counts toward the function that holds it.
Usage: function_lengths_test.py <tools/function_lengths.py> <scratch dir>"""
import os
import subprocess
import sys

script, scratch = sys.argv[1], sys.argv[2]
os.makedirs(scratch, exist_ok=True)
failures = []


def body(lines):
    """A function body of exactly `lines` lines, braces included."""
    return "{\n" + "".join(f"  x += {k};\n" for k in range(lines - 2)) + "}\n"


def run(name, text, limit=80):
    path = os.path.join(scratch, name)
    with open(path, "w") as f:
        f.write(text)
    p = subprocess.run([sys.executable, script, "--max", str(limit), path], capture_output=True, text=True)
    return p.returncode, p.stdout


def expect(label, got, want):
    if got != want:
        failures.append(f"{label}: got {got!r}, want {want!r}")


code, out = run("long.cpp", "namespace a::b {\nint planted(int x) " + body(81) + "}\n")
expect("81 lines: exit", code, 1)
expect("81 lines: listed", out, os.path.join(scratch, "long.cpp") + ":2: planted: 81 lines (limit 80)\n")
code, out = run("fits.cpp", "int fits(int x) " + body(80))
expect("80 lines: exit", code, 0)
expect("80 lines: nothing listed", out, "")

tricky = (
    "// a comment with { braces } and an unmatched {\n"
    "/* a block comment { */\n"
    "#define OPEN {\n"
    "const char* s = \"{{{\";\n"
    "const char* raw = R\"x(}{ \" } )x\";\n"
    "char c = '{';\n"
    "struct S : Base {\n"
    "  S(int a) : a_{a}, b_(a) " + body(81) +
    " public:\n"
    "  int get() const override " + body(3) +
    "  int a_, b_;\n"
    "};\n"
    "int with_lambda(int x) {\n"
    "  auto f = [&](int y) {\n" + "".join(f"    y += {k};\n" for k in range(80)) + "    return y;\n  };\n"
    "  return f(x);\n"
    "}\n"
)
code, out = run("tricky.cpp", tricky)
expect("tricky: exit", code, 1)
listed = sorted(line.split(": ", 1)[1] for line in out.splitlines())
expect("tricky: constructor and lambda holder listed", listed,
       ["S: 81 lines (limit 80)", "with_lambda: 86 lines (limit 80)"])
code, out = run("tricky.cpp", tricky, limit=2)
expect("tricky at 2: the member function is found too", "get: 3 lines (limit 2)" in out, True)

for f in failures:
    print("FAIL:", f)
print(f"function_lengths: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
