#!/usr/bin/env bash
# The gate's shards as ctest tests with RESOURCE_GROUPS (cmake/opgate_gate_tests.cmake): a scratch
# project declares 2 shards of the mfrg ci tier, `ctest --resource-spec-file npus-2.json -j 2 -L`
# runs them and the merge, and each shard must have received the NPU CTest allocated to it (emu
# ignores the device, but run.json records what opgate was given). The merged report holds every
# case of the unsharded selection.
# Usage: resource_groups_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
SPEC="$SRC/docs/distribution/npus-2.json"
SEL=(--op moe_finalize_routing_v2_grad --tier ci)
mkdir -p "$WORK/project"
cat >"$WORK/project/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.22)
project(gate_shards NONE)
enable_testing()
include("$SRC/cmake/opgate_gate_tests.cmake")
opgate_add_gate_shards(SHARDS 2 OPGATE "$OPGATE" ROOT "$SRC" OUT "$WORK/reports" LABEL npu_gate ARGS ${SEL[*]})
CMAKE
cmake -S "$WORK/project" -B "$WORK/build" >"$WORK/configure.txt" 2>&1
check "the scratch project configures" test $? -eq 0
ctest --test-dir "$WORK/build" -N -L npu_gate >"$WORK/listed.txt" 2>&1
check "it declares gate.shard.0of2, gate.shard.1of2 and gate.merge" \
  test "$(grep -oE 'gate\.(shard\.[01]of2|merge)$' "$WORK/listed.txt" | sort | tr '\n' ' ')" = "gate.merge gate.shard.0of2 gate.shard.1of2 "

# CTest refuses a test whose resources the spec cannot give: proof that RESOURCE_GROUPS is set.
printf '{"version": {"major": 1, "minor": 0}, "local": [{"npus": []}]}\n' >"$WORK/no_npus.json"
ctest --test-dir "$WORK/build" --resource-spec-file "$WORK/no_npus.json" -L npu_gate -R 'shard\.0' >"$WORK/none.txt" 2>&1
check "without an NPU in the spec the shard cannot run" test $? -ne 0
check "... because of its resources" grep -qi "resource" "$WORK/none.txt"

ctest --test-dir "$WORK/build" --resource-spec-file "$SPEC" -j 2 -L npu_gate --output-on-failure >"$WORK/ctest.txt" 2>&1
check "ctest -j 2 over the 2-NPU spec passes" test $? -eq 0 || cat "$WORK/ctest.txt"
check "... running the 2 shards and the merge" grep -q "100% tests passed, 0 tests failed out of 3" "$WORK/ctest.txt"
python3 - "$WORK/reports" "$SPEC" <<'PY' >"$WORK/devices.txt" 2>&1
import json, re, sys
reports, spec = sys.argv[1], sys.argv[2]
ids = {r["id"] for r in json.load(open(spec))["local"][0]["npus"]}
used = []
for i in (0, 1):
    info = json.load(open(f"{reports}/shard-{i}/run.json"))
    env = info.get("scheduler", {}).get("env", {})
    alloc, device = env.get("CTEST_RESOURCE_GROUP_0_NPUS", ""), env.get("OPGATE_ASCEND_DEVICE")
    m = re.fullmatch(r"id:(\w+),slots:1", alloc)
    if info.get("shard") != f"{i}/2":
        print(f"FAIL: shard-{i} ran shard {info.get('shard')}")
    if not m or m.group(1) not in ids:
        print(f"FAIL: shard-{i}: CTest allocated {alloc!r}, not one NPU of the spec {sorted(ids)}")
    elif device != m.group(1):
        print(f"FAIL: shard-{i}: opgate got OPGATE_ASCEND_DEVICE={device!r} for the allocation {alloc!r}")
    else:
        used.append(device)
print(f"devices used: {used}")
PY
cat "$WORK/devices.txt"
check "each shard got the NPU CTest allocated to it" test -z "$(grep FAIL "$WORK/devices.txt")"
check "... both shards ran with a device" grep -qE "devices used: \['[0-9]+', '[0-9]+'\]" "$WORK/devices.txt"
n_sel=$("$OPGATE" list "${SEL[@]}" --root "$SRC" | tail -1 | cut -d' ' -f1)
check "the merged report holds every case of the selection ($n_sel)" \
  test "$(wc -l <"$WORK/reports/merged/results.jsonl")" -eq "$n_sel"

# The shard wrapper: a malformed allocation is one error line and exit 2; none is no error.
CTEST_RESOURCE_GROUP_0_NPUS="gpu:3" bash "$SRC/cmake/opgate_gate_shard.sh" "$OPGATE" 0/2 "$WORK/bad" "${SEL[@]}" \
  >"$WORK/bad.txt" 2>"$WORK/bad.err"
check "a malformed CTEST_RESOURCE_GROUP_0_NPUS exits 2" test $? -eq 2
check "... with one line naming it" test "$(grep -c "CTEST_RESOURCE_GROUP_0_NPUS='gpu:3'" "$WORK/bad.err")" -eq 1
check "... and runs nothing" test ! -e "$WORK/bad"
env -u CTEST_RESOURCE_GROUP_0_NPUS -u OPGATE_ASCEND_DEVICE bash "$SRC/cmake/opgate_gate_shard.sh" "$OPGATE" 1/2 \
  "$WORK/plain" --root "$SRC" "${SEL[@]}" -q >"$WORK/plain.txt" 2>&1
check "without a resource spec a shard runs on the default device" test $? -eq 0
check "... and says so" grep -q "^device: no CTest allocation" "$WORK/plain.txt"

echo "resource group tests: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
