#!/usr/bin/env bash
# The gate's configure step needs no test package (label unit): the gate preset's settings
# (CMakePresets.json: tests, benchmarks and fuzz targets off) configure with GoogleTest, RapidCheck,
# Google Benchmark and Python hidden from find_package, and the build has the opgate target and
# none of the test, fuzz, benchmark or stand-in targets.
# Usage: gate_configure_test.sh <cmake> <source dir> <scratch dir>
set -euo pipefail
cmake="$1" src="$2" scratch="$3"
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$scratch"
# The gate preset's cache variables, read from the presets file (so a change there is tested).
mapfile -t gate_vars < <(python3 - "$src/CMakePresets.json" <<'PY'
import json, sys
presets = {p["name"]: p for p in json.load(open(sys.argv[1]))["configurePresets"]}
gate = presets["gate"]
variables = dict(presets[gate["inherits"]].get("cacheVariables", {})) if "inherits" in gate else {}
variables.update(gate.get("cacheVariables", {}))
for k, v in variables.items():
    print(f"-D{k}={v}")
PY
)
printf '%s\n' "${gate_vars[@]}" | grep -qx -- "-DOPGATE_BUILD_TESTS=OFF" || fail "the gate preset does not turn the tests off: ${gate_vars[*]}"
out=$("$cmake" -S "$src" -B "$scratch" "${gate_vars[@]}" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
        -DCMAKE_DISABLE_FIND_PACKAGE_rapidcheck=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
        -DCMAKE_DISABLE_FIND_PACKAGE_Python3=ON 2>&1) || fail "the gate settings do not configure without the test packages: $out"
targets=$("$cmake" --build "$scratch" --target help 2>&1) || fail "no target list: $targets"
grep -qE "(^|[ /])opgate(:|$| )" <<<"$targets" || fail "the gate build has no opgate target: $targets"
for t in core_tests moe_ffn_tests fuzz_npy opgate_bench standin_opapi; do
  ! grep -qE "(^|[ /])$t(:|$| )" <<<"$targets" || fail "the gate build has the target $t"
done
echo "gate configure: no test package needed, opgate and no test, fuzz, benchmark or stand-in target"
