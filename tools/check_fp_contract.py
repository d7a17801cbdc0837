#!/usr/bin/env python3
"""Fails when a translation unit whose floating-point results can reach a golden file, a verdict or
a metric may be compiled with FP contraction (issue 21, part 2).

Usage: tools/check_fp_contract.py <compile_commands.json> <source dir>

Checked: every entry of the compilation database whose file lies in one of the opgate layers
(core/ reference/ device/ cases/ harness/ history/ tools/), in the stand-in CANN (tests/ascend/,
whose results reach the marshalling verdicts) or in the build's generated/ sources. For each, the
effective -ffp-contract is that of the last flag that sets it: -ffp-contract=X, or -ffast-math,
-Ofast, -ffp-model=fast|precise (clang: contract fast / on). It must be "off"; with no such flag
the compiler default applies (GCC: fast; clang: on), which fails too. Flags that license other
value-changing rewrites (-funsafe-math-optimizations, -fassociative-math, -freciprocal-math) fail
wherever they appear. Every layer must have at least one entry, so an empty or foreign database
cannot pass. Prints "<file>: <reason>" per offender and exits 1 when there is any.
"""
import json
import os
import shlex
import sys

LAYERS = ("core", "reference", "device", "cases", "harness", "history", "tools")
ALSO = ("tests/ascend",)
# Flag -> the -ffp-contract it implies (GCC leaves contraction as is under -ffast-math, clang makes
# it fast; either way the translation unit is no longer reproducible).
IMPLIES = {"-ffast-math": "fast", "-Ofast": "fast", "-ffp-model=fast": "fast", "-ffp-model=precise": "on"}
FORBIDDEN = ("-funsafe-math-optimizations", "-fassociative-math", "-freciprocal-math")


def arguments(entry):
    if "arguments" in entry:
        return list(entry["arguments"])
    return shlex.split(entry["command"])


def effective_contract(args):
    """(value, flag that set it), or (None, None) when no argument sets it."""
    value, flag = None, None
    for a in args:
        if a.startswith("-ffp-contract="):
            value, flag = a.split("=", 1)[1], a
        elif a in IMPLIES:
            value, flag = IMPLIES[a], a
    return value, flag


def problems(args):
    out = [f"{a} (value-changing FP rewrites)" for a in args if a in FORBIDDEN]
    value, flag = effective_contract(args)
    if value is None:
        out.append("no -ffp-contract=off (the compiler default contracts a*b+c)")
    elif value != "off":
        out.append(f"effective {flag} (the last flag that sets FP contraction; must be -ffp-contract=off)")
    return out


def layer_of(path, source_dir, build_dir):
    rel = os.path.relpath(path, source_dir)
    for d in LAYERS + ALSO:
        if rel == d or rel.startswith(d + "/"):
            return d
    if os.path.relpath(path, build_dir).startswith("generated/"):
        return "generated"
    return None


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    db_path, source_dir = sys.argv[1], os.path.realpath(sys.argv[2])
    try:
        with open(db_path) as f:
            db = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{db_path}: cannot read the compilation database: {e}")
        return 1
    build_dir = os.path.realpath(os.path.dirname(os.path.abspath(db_path)))
    seen, offenders = {}, []
    for entry in db:
        path = os.path.realpath(os.path.join(entry.get("directory", ""), entry["file"]))
        layer = layer_of(path, source_dir, build_dir)
        if layer is None:
            continue
        seen[layer] = seen.get(layer, 0) + 1
        shown = os.path.relpath(path, build_dir if layer == "generated" else source_dir)
        for p in problems(arguments(entry)):
            offenders.append(f"{shown}: {p}")
    missing = [d for d in LAYERS if d not in seen]
    for d in missing:
        offenders.append(f"{d}/: no translation unit in {db_path} (wrong database or source dir?)")
    for o in offenders:
        print(o)
    checked = sum(seen.values())
    print(f"fp-contract: {checked} translation units checked, {len(offenders)} problem(s)")
    return 1 if offenders else 0


if __name__ == "__main__":
    sys.exit(main())
