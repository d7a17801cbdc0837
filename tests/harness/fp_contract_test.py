#!/usr/bin/env python3
"""tools/check_fp_contract.py on planted compilation databases: a clean one passes; a planted
-ffp-contract=fast after the off (what target_compile_options(opgate_core PRIVATE
-ffp-contract=fast) produces), a missing flag, -ffast-math after the off, -funsafe-math-optimizations
and a database lacking a layer each fail and name the file and the flag; a fast before the off, and
a fast on a file outside the checked folders (bench/), pass.
Usage: fp_contract_test.py <tools/check_fp_contract.py> <scratch dir>"""
import json
import os
import subprocess
import sys

script, scratch = sys.argv[1], sys.argv[2]
src = os.path.join(scratch, "src")
build = os.path.join(scratch, "build")
os.makedirs(build, exist_ok=True)
failures = []
GOOD = "-O3 -Wall -ffp-contract=off -Werror -std=c++17"
LAYER_FILES = ["core/compare.cpp", "reference/math/shared_gemm.cpp", "device/emu/moe_ffn.cpp",
               "cases/registry.cpp", "harness/runner.cpp", "history/db.cpp", "tools/opgate.cpp"]


def database(flags):
    """One entry per layer file; `flags` maps a file to its flags (GOOD otherwise)."""
    files = LAYER_FILES + [f for f in flags if f not in LAYER_FILES]
    return [{"directory": build, "file": os.path.join(src, f),
             "command": f"/usr/bin/g++ {flags.get(f, GOOD)} -o x.o -c {os.path.join(src, f)}"}
            for f in files]


def run(name, db):
    path = os.path.join(build, name + ".json")
    with open(path, "w") as f:
        json.dump(db, f)
    p = subprocess.run([sys.executable, script, path, src], capture_output=True, text=True)
    return p.returncode, p.stdout


def expect(label, db, code, *needles):
    got, out = run(label.replace(" ", "_"), db)
    missing = [n for n in needles if n not in out]
    if got != code or missing:
        failures.append(f"{label}: exit {got} (want {code}), output lacks {missing}:\n{out}")


expect("clean", database({}), 0, "7 translation units checked, 0 problem(s)")
expect("planted fast after off", database({"core/compare.cpp": GOOD + " -ffp-contract=fast"}), 1,
       "core/compare.cpp: effective -ffp-contract=fast")
expect("fast before off", database({"core/compare.cpp": "-ffp-contract=fast " + GOOD}), 0, "0 problem(s)")
expect("no flag", database({"cases/registry.cpp": "-O3 -Wall -std=c++17"}), 1,
       "cases/registry.cpp: no -ffp-contract=off")
expect("fast-math after off", database({"harness/runner.cpp": GOOD + " -ffast-math"}), 1,
       "harness/runner.cpp: effective -ffast-math")
expect("unsafe math", database({"tools/opgate.cpp": GOOD + " -funsafe-math-optimizations"}), 1,
       "tools/opgate.cpp: -funsafe-math-optimizations")
expect("stand-in", database({"tests/ascend/standin_moe_ffn.cpp": "-O3 -ffp-contract=on"}), 1,
       "tests/ascend/standin_moe_ffn.cpp: effective -ffp-contract=on")
expect("outside the layers", database({"bench/bench_limits.cpp": "-O3 -ffp-contract=fast"}), 0, "0 problem(s)")
# A database in the arguments form (as clangd tools write it) is read the same way.
args_db = [{"directory": build, "file": os.path.join(src, f),
            "arguments": ["g++", "-ffp-contract=off", "-c", os.path.join(src, f)]
            + (["-ffp-contract=fast"] if f.startswith("device/") else [])} for f in LAYER_FILES]
expect("arguments form", args_db, 1, "device/emu/moe_ffn.cpp: effective -ffp-contract=fast")
expect("a layer missing", [e for e in database({}) if "/history/" not in e["file"]], 1,
       "history/: no translation unit")
expect("empty database", [], 1, "core/: no translation unit")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
