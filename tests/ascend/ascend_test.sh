#!/usr/bin/env bash
# `opgate run --backend ascend` against the stand-in CANN (tests/ascend/CMakeLists.txt). What this
# proves is opgate's side of the call — library lookup, symbols, marshalling, two-phase launch,
# copies, guards and error propagation — not the NPU (device/ascend/README.md).
# Usage: ascend_test.sh <opgate> <source dir> <stand-in root> <scratch dir> <scenario> "<ops>"
#   scenario: unavailable | errors | marshalling | op:<stem>;  ops: stems with a stand-in forwarder.
set -uo pipefail
OPGATE="$1"; SRC="$2"; STANDIN="$3"; WORK="$4"; SCENARIO="$5"; read -r -a OPS <<<"${6:-}"
rm -rf "$WORK"; mkdir -p "$WORK"
failures=0; passes=0
# Every run starts from a clean CANN environment; the stand-in is the only "installation".
unset ASCEND_HOME_PATH ASCEND_TOOLKIT_HOME ASCEND_OPP_PATH OPGATE_ASCEND_DEVICE OPGATE_ASCEND_OP_LIBS
for v in $(env | sed -n 's/^\(OPGATE_STANDIN_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export LD_LIBRARY_PATH=""
CANN="$STANDIN/cann"
export ASCEND_OPP_PATH="$CANN/opp"

ok() { passes=$((passes + 1)); }
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
# opgate_in <env assignments...> -- <opgate args...>: runs opgate; stdout+stderr in $WORK/out.txt,
# its --out folder (if any) in $LAST_OUT.
opgate_in() {
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  LAST_OUT=""
  local prev=""
  for a in "$@"; do [ "$prev" = --out ] && LAST_OUT="$a"; prev="$a"; done
  env "${envs[@]}" "$OPGATE" "$@" >"$WORK/out.txt" 2>&1
}
LAST_OUT=""
# What the last run said: its output, and the counter line its summary.txt ends with (the
# terminal ends with the totals line "3 passed in 0.4 s").
said() {
  cat "$WORK/out.txt"
  if [ -n "$LAST_OUT" ] && [ -f "$LAST_OUT/summary.txt" ]; then tail -1 "$LAST_OUT/summary.txt"; fi
}
# expect <exit code> <regex> <description>: checks the last opgate_in.
expect() {
  local got="$1" want="$2" pattern="$3" what="$4"
  said >"$WORK/said.txt"  # not a pipe: grep -q would end `said` early, and pipefail count that
  if [ "$got" -ne "$want" ] || ! grep -qE -- "$pattern" "$WORK/said.txt"; then
    bad "$what: exit $got (want $want), output lacks /$pattern/:"; sed 's/^/    /' "$WORK/out.txt" | head -20
  else
    ok
  fi
}
# unavailable <regex> <env...>: exit 2 with one stderr line "ascend backend unavailable: ..." matching.
unavailable() {
  local pattern="$1"; shift
  env "$@" "$OPGATE" run --cases "$SMOKE" --backend ascend --out "$WORK/never" >"$WORK/out.txt" 2>"$WORK/err.txt"
  local got=$? lines; lines=$(wc -l <"$WORK/err.txt")
  if [ "$got" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -qE -- "$pattern" "$WORK/err.txt"; then
    bad "unavailable ($*): exit $got, stderr ($lines lines) lacks /$pattern/:"; cat "$WORK/err.txt"
  elif [ -e "$WORK/never" ]; then
    bad "unavailable ($*): a report folder was written"
  else
    ok
  fi
}
# counts <report dir>: the summary's verdict counter line.
counts() { grep -E '^cases:' "$1/summary.txt"; }

FIRST="${OPS[0]:-}"
if [ -z "$FIRST" ]; then echo "no operator has a stand-in forwarder"; exit 1; fi
SMOKE="$SRC/cases/$FIRST/smoke.json"
INVALID="$SRC/cases/$FIRST/invalid.json"

case "$SCENARIO" in
unavailable)
  # Where CANN is looked for, in order, and the exact reason when something is missing.
  unavailable "CANN runtime \(libascendcl.so, or libacl_rt.so on CANN 8.5\+\) not found in .*ASCEND_HOME_PATH unset.*LD_LIBRARY_PATH unset.*set_env.sh" \
    LD_LIBRARY_PATH=
  unavailable "not found in \\\$ASCEND_HOME_PATH/lib64 \(ASCEND_HOME_PATH=/nonexistent/cann\)" ASCEND_HOME_PATH=/nonexistent/cann
  unavailable "libnnopbase.so \(the aclnn tensor API\) not found" ASCEND_HOME_PATH="$STANDIN/no_nnopbase"
  unavailable "no aclnn operator library \(libopapi_transformer.so, libopapi.so, .*\) found" ASCEND_HOME_PATH="$STANDIN/no_oplib"
  unavailable "no_sync/lib64/libascendcl.so does not export aclrtSynchronizeStream" ASCEND_HOME_PATH="$STANDIN/no_sync"
  unavailable "aclrtSetDevice\(0\) failed with 207004: stand-in: no NPU device.*npu-smi" ASCEND_HOME_PATH="$CANN" \
    OPGATE_STANDIN_DEVICE_COUNT=0
  unavailable "aclrtSetDevice\(5\) failed with 107001.*aclrtGetDeviceCount: 1" ASCEND_HOME_PATH="$CANN" OPGATE_ASCEND_DEVICE=5
  unavailable "aclInit\(NULL\) failed with 507899: stand-in: injected failure of aclInit" ASCEND_HOME_PATH="$CANN" \
    OPGATE_STANDIN_FAIL=aclInit
  unavailable "aclrtCtxSetSysParamOpt\(ACL_OPT_DETERMINISTIC, 1\) failed" ASCEND_HOME_PATH="$CANN" \
    OPGATE_STANDIN_FAIL=aclrtCtxSetSysParamOpt
  unavailable "ASCEND_OPP_PATH is not set \(aclnn finds its operator kernels there; every call would fail with 561107\)" \
    ASCEND_HOME_PATH="$CANN" ASCEND_OPP_PATH=
  unavailable "ASCEND_OPP_PATH=/nonexistent/opp does not exist" ASCEND_HOME_PATH="$CANN" ASCEND_OPP_PATH=/nonexistent/opp
  unavailable "OPGATE_ASCEND_OP_LIBS names /nonexistent/libcust_opapi.so, which does not load" ASCEND_HOME_PATH="$CANN" \
    OPGATE_ASCEND_OP_LIBS=/nonexistent/libcust_opapi.so
  env OPGATE_ASCEND_DEVICE=x "$OPGATE" run --cases "$SMOKE" --backend ascend >"$WORK/out.txt" 2>&1
  expect $? 2 "OPGATE_ASCEND_DEVICE='x' is not a device id" "malformed device id"
  # The other places CANN may be: ASCEND_TOOLKIT_HOME, the loader path, and CANN 8.5+'s libacl_rt.so.
  opgate_in ASCEND_TOOLKIT_HOME="$CANN" -- run --cases "$SMOKE" --backend ascend --out "$WORK/toolkit" -q
  expect $? 0 "failed:0 .*skipped:0 .*backend_error:0" "ASCEND_TOOLKIT_HOME as the root"
  opgate_in LD_LIBRARY_PATH="$CANN/lib64" -- run --cases "$SMOKE" --backend ascend --out "$WORK/ldpath" -q
  expect $? 0 "failed:0 .*skipped:0 .*backend_error:0" "LD_LIBRARY_PATH only"
  grep -q "\"runtime\":\"$CANN/lib64/libascendcl.so\"" "$WORK/ldpath/summary.txt" && ok ||
    bad "the report names the runtime the loader chose"
  opgate_in ASCEND_HOME_PATH="$STANDIN/cann_rt" -- run --cases "$SMOKE" --backend ascend --out "$WORK/rt" -q
  expect $? 0 "failed:0 .*skipped:0 .*backend_error:0" "libacl_rt.so runtime"
  grep -q '"runtime":"[^"]*/cann_rt/lib64/libacl_rt.so"' "$WORK/rt/summary.txt" && ok || bad "report names libacl_rt.so"
  ;;

errors)
  # Failures of each call reach the verdict with the call, its code and the runtime's message.
  A=(ASCEND_HOME_PATH="$CANN")
  ENTRY=$(env "${A[@]}" "$OPGATE" run --cases "$SMOKE" --backend ascend --out "$WORK/probe" -q >/dev/null 2>&1;
          sed -n "s/.*\"$FIRST\":{\"aclnn\":\"\([A-Za-z0-9]*\)\".*/\1/p" "$WORK/probe/summary.txt" | head -1)
  [ -n "$ENTRY" ] && ok || bad "the report names the aclnn entry point"
  ONE=(run --cases "$SMOKE" --backend ascend --out "$WORK/r" --filter "$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$SMOKE" | head -1)")
  check_error() {  # check_error <regex> <env...>
    local pattern="$1"; shift
    rm -rf "$WORK/r"
    opgate_in "${A[@]}" "$@" -- "${ONE[@]}"
    expect $? 1 "BACKEND_ERROR .*$pattern" "error propagation ($*)"
  }
  check_error "the device rejects a call the reference accepts: ${ENTRY}GetWorkspaceSize failed with 561002: stand-in: injected failure" \
    OPGATE_STANDIN_FAIL="${ENTRY}GetWorkspaceSize:561002"
  check_error "${ENTRY} failed with 361001: stand-in: injected failure of ${ENTRY} " OPGATE_STANDIN_FAIL="$ENTRY"
  check_error "aclrtSynchronizeStream after ${ENTRY} failed with 507899" OPGATE_STANDIN_FAIL=aclrtSynchronizeStream
  check_error "aclrtMalloc\([0-9]+ bytes\) failed with 200000: stand-in: injected failure of aclrtMalloc \(call 2\)" \
    OPGATE_STANDIN_FAIL=aclrtMalloc@2
  check_error "aclrtMemcpy\(host to device, [0-9]+ bytes\) failed with 507899" OPGATE_STANDIN_FAIL=aclrtMemcpyHostToDevice@2
  check_error "aclrtMemcpy\(device to host, [0-9]+ bytes\) failed with 507899" OPGATE_STANDIN_FAIL=aclrtMemcpyDeviceToHost
  check_error "aclCreateTensor\([a-z0-9]+ \[[0-9, ]*\]\) returned NULL: stand-in: injected failure" OPGATE_STANDIN_FAIL=aclCreateTensor@2
  check_error "${ENTRY}GetWorkspaceSize failed with 561000: stand-in: injected" OPGATE_STANDIN_FAIL="${ENTRY}GetWorkspaceSize"
  # A kernel that writes outside its output or into an input is caught on the device side. CANN
  # lets a kernel touch up to ALIGN_UP(len, 32) + 32 bytes: the first byte past that is an error,
  # bytes inside it a warning in the case's result.
  check_error "write outside output '[A-Za-z0-9.]+' on the device: 1 guard byte\(s\) after it changed \(first at byte [0-9]+ past the end, beyond the [0-9]+ bytes ALIGN_UP\(len, 32\) \+ 32 allows\)" \
    OPGATE_STANDIN_OOB=beyond
  check_error "write outside output '[A-Za-z0-9.]+' on the device: 1 guard byte\(s\) before it changed" OPGATE_STANDIN_OOB=before
  rm -rf "$WORK/r"
  opgate_in "${A[@]}" OPGATE_STANDIN_OOB=after -- "${ONE[@]}"
  expect $? 0 "warning: output '[A-Za-z0-9.]+' \([0-9]+ bytes\): the kernel changed 1 of the [0-9]+ bytes after its end that CANN lets it touch" \
    "one byte past the end: a warning"
  grep -q '"warnings":\["output ' "$WORK/r/results.jsonl" && ok || bad "the warning is not in results.jsonl"
  # Whole 32-byte blocks past every output end of the smoke tier (the whole slack), at least one of
  # them unaligned: warnings, never BACKEND_ERROR.
  T="$WORK/oob_trace.txt"
  rm -f "$T"
  opgate_in "${A[@]}" OPGATE_STANDIN_OOB=block OPGATE_STANDIN_TRACE="$T" -- run --cases "$SMOKE" --backend ascend \
    --out "$WORK/block" -q
  expect $? 0 "failed:0 .*backend_error:0" "whole 32-byte blocks past the output end"
  unaligned=$(sed -n 's/.*kernel wrote [0-9]* byte(s) block output .* of \([0-9]*\) bytes .*/\1/p' "$T" |
              awk '$1 % 32 != 0' | wc -l)
  [ "$unaligned" -gt 0 ] && ok || bad "no smoke case has an unaligned output end (trace: $(grep -c 'block output' "$T") writes)"
  nwarn=$(grep -c '"warnings":' "$WORK/block/results.jsonl")
  [ "$nwarn" -eq "$(grep -c 'block output' "$T")" ] && ok || bad "$nwarn warnings for $(grep -c 'block output' "$T") block writes"
  check_error "the device modified input '[A-Za-z0-9.]+'" OPGATE_STANDIN_CORRUPT_INPUT=1
  # A kernel that takes its process down: CRASHED, and junit.xml reports it as an <error> (an
  # infrastructure verdict), not a <failure>, counted on its suite and on <testsuites>.
  rm -rf "$WORK/r"
  opgate_in "${A[@]}" OPGATE_STANDIN_CRASH=1 -- "${ONE[@]}"
  expect $? 1 "CRASHED .*child died of signal 11" "a crashing kernel"
  python3 - "$WORK/r/junit.xml" >"$WORK/junit_crash.txt" 2>&1 <<'P' && ok || bad "CRASHED in junit.xml: $(cat "$WORK/junit_crash.txt")"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall(".//testcase")
errors = [e for c in cases for e in c.findall("error")]
problems = []
if len(cases) != 1 or len(errors) != 1: problems.append(f"{len(cases)} testcase(s), {len(errors)} <error>(s)")
elif errors[0].get("type") != "CRASHED" or "signal 11" not in errors[0].get("message", ""): problems.append(str(errors[0].attrib))
if cases and cases[0].find("failure") is not None: problems.append("a <failure> too")
if root.get("errors") != "1" or root.find("testsuite").get("errors") != "1" or root.get("failures") != "0":
    problems.append(f"counts: testsuites errors={root.get('errors')} failures={root.get('failures')}")
print("; ".join(problems)); sys.exit(1 if problems else 0)
P
  # Rejection codes: a device that returns another code than the reference fails the case.
  CODE_CASE=$(sed -n 's/.*"id": *"\([^"]*\)".*/\1/p' "$INVALID" | head -1)
  opgate_in "${A[@]}" OPGATE_STANDIN_FAIL="${ENTRY}GetWorkspaceSize:999" -- run --cases "$INVALID" --backend ascend \
    --out "$WORK/rej" --filter "^${CODE_CASE}\$"
  expect $? 1 "FAILED .*contract mismatch: the reference returns [0-9]+, the device returns 999" "rejection mismatch"
  # A device that accepts an invalid call: FAILED, and the unlaunched executor is still released.
  opgate_in "${A[@]}" OPGATE_STANDIN_LENIENT=1 OPGATE_STANDIN_STRICT_EXIT=1 -- run --cases "$INVALID" --backend ascend \
    --out "$WORK/lenient" --filter "^${CODE_CASE}\$" --no-isolate
  expect $? 1 "FAILED .*contract mismatch: the reference returns [0-9]+, the device returns 0" "lenient device"
  grep -q "at exit" "$WORK/out.txt" && bad "an unlaunched executor leaked: $(grep 'at exit' "$WORK/out.txt")" || ok
  # An operator library without the operator: SKIPPED with the reason, not an error.
  opgate_in ASCEND_HOME_PATH="$STANDIN/no_ops" -- run --cases "$SMOKE" --backend ascend --out "$WORK/noops"
  expect $? 0 "SKIPPED .*${ENTRY}GetWorkspaceSize[^ ]*( [A-Za-z0-9]+,?)* not exported by the operator libraries found \([^)]*no_ops/lib64/libopapi.so\): this CANN lacks the operator" \
    "missing operator symbol"
  grep -qE "\"$FIRST\":\{\"unavailable\":\"${ENTRY}GetWorkspaceSize[^\"]* not exported" "$WORK/noops/summary.txt" && ok ||
    bad "the report says the operator is unavailable"
  # In one process (--no-isolate): every handle released, aclFinalize called (the stand-in exits 3 otherwise).
  opgate_in "${A[@]}" OPGATE_STANDIN_STRICT_EXIT=1 -- run --cases "$SMOKE" --backend ascend --out "$WORK/inproc" --no-isolate -q
  expect $? 0 "failed:0 .*backend_error:0" "no leaked handle in one process"
  opgate_in "${A[@]}" OPGATE_STANDIN_STRICT_EXIT=1 OPGATE_STANDIN_FAIL="aclrtMalloc@3" -- run --cases "$SMOKE" \
    --backend ascend --out "$WORK/inproc_fail" --no-isolate -q
  expect $? 1 "backend_error:[1-9]" "no leaked handle after a failure in one process"
  grep -q "at exit" "$WORK/out.txt" && bad "handles leaked after a failure: $(grep 'at exit' "$WORK/out.txt")" || ok
  ;;

marshalling)
  # The calls as the stand-in saw them (OPGATE_STANDIN_TRACE).
  T="$WORK/trace.txt"
  opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_TRACE="$T" -- run --cases "$SMOKE" --backend ascend --out "$WORK/r" -q
  expect $? 0 "failed:0 .*backend_error:0" "smoke with a trace"
  ncases=$(grep -c . "$WORK/r/results.jsonl")
  ninit=$(grep -c ' aclInit NULL$' "$T")
  npid=$(grep ' aclInit NULL$' "$T" | cut -d' ' -f1 | sort -u | wc -l)
  # One device probe plus one context per case process; never two in one process, never inherited.
  [ "$ninit" -eq $((ncases + 1)) ] && [ "$npid" -eq "$ninit" ] && ok ||
    bad "aclInit: $ninit calls in $npid processes for $ncases cases (want one per case process plus the probe)"
  # Determinism before the first aclnn call of every process, and the device set before it.
  awk '{ pid=$1 }
       / aclrtSetDevice / { dev[pid]=NR }
       / aclrtCtxSetSysParamOpt 0 1$/ { if (!(pid in dev)) bad="ctx option before aclrtSetDevice"; ctx[pid]=NR }
       / aclrtSetSysParamOpt 0 1$/ { proc[pid]=NR }
       /GetWorkspaceSize/ { if (!(pid in ctx) || !(pid in proc)) bad="aclnn call before the determinism switch" }
       END { if (bad != "") { print bad; exit 1 } }' "$T" && ok || bad "call order (determinism switch)"
  # Only host<->device copies, formats ND, 32-byte aligned device addresses; outputs sit between guards.
  grep ' aclrtMemcpy ' "$T" | grep -vqE 'kind=(1|2)$' && bad "a copy of another kind" || ok
  grep ' aclCreateTensor ' "$T" | grep -vq 'format=2 ' && bad "a tensor not in ND format" || ok
  grep -q ' aclCreateTensor .* data=+256$' "$T" && ok || bad "no output placed after its 256 guard bytes"
  grep -q ' aclCreateTensor .* data=+0$' "$T" && ok || bad "no input at the start of its allocation"
  grep -qE ' aclCreateTensor dtype=[0-9]+ dims=\[[0-9,]*\] strides=\[[0-9,]*\] offset=0 format=2 storage=' "$T" && ok ||
    bad "tensor descriptors"
  awk '/ aclCreateTensor / { split($0, a, "dims=\\["); split(a[2], d, "\\]"); split($0, b, "strides=\\[");
         split(b[2], s, "\\]"); n=split(d[1], dd, ","); split(s[1], ss, ","); st=1;
         for (i=n; i>=1; i--) { if (ss[i] != st) { print "non-contiguous: " $0; exit 1 } st*=dd[i] } }' "$T" && ok ||
    bad "strides are not the contiguous row-major strides"
  # The workspace GetWorkspaceSize asks for is allocated and passed with exactly that size.
  grep -q 'GetWorkspaceSize.* -> 0 workspace=65536$' "$T" && grep -q ' aclrtMalloc 65536 ' "$T" &&
    grep -q ' launched workspace=65536$' "$T" && ok || bad "workspace of 65536 bytes"
  rm -f "$T"
  opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_TRACE="$T" OPGATE_STANDIN_WORKSPACE=0 -- run --cases "$SMOKE" \
    --backend ascend --out "$WORK/r0" -q
  expect $? 0 "failed:0 .*backend_error:0" "zero workspace"
  grep -q ' launched workspace=0$' "$T" && ! grep -q ' aclrtMalloc 0 ' "$T" && ok || bad "zero workspace: NULL, no allocation"
  # Rejections: the descriptors reach GetWorkspaceSize, which answers with the reference's code.
  rm -f "$T"
  opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_TRACE="$T" -- run --cases "$INVALID" --backend ascend --out "$WORK/ri" -q
  expect $? 0 "failed:0 .*backend_error:0" "invalid tier"
  grep -qE 'GetWorkspaceSize.* -> 1610(01|02)$' "$T" && ok || bad "no aclnn-layer rejection in the trace"
  grep -q '=NULL' "$T" && ok || bad "no NULL optional in the trace"
  # --devices: one worker per NPU, each case process on exactly one of them, the serial verdicts.
  rm -f "$T"
  opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_TRACE="$T" OPGATE_STANDIN_DEVICE_COUNT=2 -- run --cases "$SMOKE" \
    --backend ascend --devices 0,1 --out "$WORK/rd" -q
  expect $? 0 "failed:0 .*backend_error:0" "--devices 0,1"
  grep -q '"jobs": 2' "$WORK/rd/run.json" && ok || bad "--devices 0,1: run.json does not say 2 jobs"
  for d in 0 1; do grep -q " aclrtSetDevice $d$" "$T" && ok || bad "--devices 0,1: no case process on NPU $d"; done
  awk '/ aclrtSetDevice / { n[$1]++ } END { for (p in n) if (n[p] > 1) exit 1 }' "$T" && ok ||
    bad "--devices 0,1: a process set two devices"
  cmp -s <(python3 -c 'import json,sys; [print(json.loads(l)["id"], json.loads(l)["verdict"]) for l in open(sys.argv[1])]' "$WORK/r/results.jsonl") \
         <(python3 -c 'import json,sys; [print(json.loads(l)["id"], json.loads(l)["verdict"]) for l in open(sys.argv[1])]' "$WORK/rd/results.jsonl") &&
    ok || bad "--devices 0,1: verdicts or order differ from the serial run"
  opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_DEVICE_COUNT=2 -- run --cases "$SMOKE" --backend ascend \
    --devices 0,5 --out "$WORK/rd5" -q
  expect $? 2 "NPU 5: ascend backend unavailable: .*device 5 does not exist" "--devices with a missing NPU"
  [ -e "$WORK/rd5" ] && bad "--devices 0,5: a report folder was written" || ok
  ;;

op:*)
  OP="${SCENARIO#op:}"
  # Every tier of the operator: the same verdicts on the stand-in as on the emulator.
  for tier in smoke ci regression invalid; do
    FILE="$SRC/cases/$OP/$tier.json"
    [ -f "$FILE" ] || continue
    "$OPGATE" run --cases "$FILE" --backend emu --out "$WORK/emu_$tier" -q >/dev/null 2>&1
    opgate_in ASCEND_HOME_PATH="$CANN" -- run --cases "$FILE" --backend ascend --out "$WORK/asc_$tier" -q --strict
    expect $? 0 "skipped:0 .*backend_error:0" "$OP $tier on the stand-in"
    if [ "$(counts "$WORK/emu_$tier")" != "$(counts "$WORK/asc_$tier" 2>/dev/null)" ]; then
      bad "$OP $tier: emu '$(counts "$WORK/emu_$tier")' vs ascend '$(counts "$WORK/asc_$tier" 2>/dev/null)'"
    else
      ok
    fi
  done
  # Determinism: repeated device runs are bit-identical.
  opgate_in ASCEND_HOME_PATH="$CANN" -- run --cases "$SRC/cases/$OP/smoke.json" --backend ascend --out "$WORK/rep" -q --repeat 2
  expect $? 0 "failed:0 .*backend_error:0" "$OP --repeat 2"
  # The documented support table: a SoC the operator does not list gives SKIPPED with the reason.
  case "$OP" in
    incre_flash_attention_v3|incre_flash_attention_v4|moe_ffn) SOC=Ascend910_9391; FAMILY="Atlas A3" ;;
    *) SOC=Ascend310P3; FAMILY="Atlas inference series \(310P\)" ;;
  esac
  opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_SOC="$SOC" -- run --cases "$SRC/cases/$OP/smoke.json" --backend ascend \
    --out "$WORK/soc"
  expect $? 0 "SKIPPED .*$SOC is $FAMILY; .* lists only" "$OP on $SOC"
  grep -qE "(PASSED|FAILED|BACKEND_ERROR)" "$WORK/out.txt" && bad "$OP ran on $SOC" || ok
  # Operator-specific marshalling, from the trace.
  T="$WORK/trace.txt"
  opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_TRACE="$T" -- run --cases "$SRC/cases/$OP/smoke.json" --backend ascend \
    --out "$WORK/tr" -q
  case "$OP" in
    moe_finalize_routing_v2_grad)
      for dt in 0 1 27 3; do grep -q " aclCreateTensor dtype=$dt " "$T" && ok || bad "no tensor of aclDataType $dt"; done
      grep -qE 'GetWorkspaceSize.*dropPadMode=1 .*expertNum=[1-9][0-9]* expertCapacity=[1-9]' "$T" && ok ||
        bad "drop/pad attributes"
      ;;
    incre_flash_attention_v3)
      grep -q ' aclCreateTensorList ' "$T" && ok || bad "no tensor list"
      grep -q ' aclCreateIntArray ' "$T" && ok || bad "no int array (actualSeqLengths)"
      grep -q 'blocktable=int32' "$T" && ok || bad "no paged KV call with a block table"
      ;;
    incre_flash_attention_v4)
      grep -q 'kvPaddingSize=int64' "$T" && ok || bad "no kvPaddingSize INT64 tensor"
      grep -q 'blocktable=int32' "$T" && ok || bad "no paged KV call with a block table"
      # The 25-parameter V4 prototype is called from CANN 8.0.0 on only.
      opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_CANN_VERSION=7.1.0 -- run --cases "$SRC/cases/$OP/smoke.json" \
        --backend ascend --out "$WORK/cann_710"
      expect $? 0 "SKIPPED .*aclnnIncreFlashAttentionV4 is called with its CANN 8.0.0 prototype, and this CANN reports version '7.1.0'" \
        "aclnnIncreFlashAttentionV4 on CANN 7.1.0"
      ;;
    moe_ffn)
      grep -q ' aclCreateIntArray ' "$T" && ok || bad "no expertTokens int array"
      grep -q '"moe_ffn":{"aclnn":"aclnnFFN"' "$WORK/tr/summary.txt" && ok || bad "the report names aclnnFFN"
      # An older library that still exports aclnnMoeFFN: preferred, and named in the report; the
      # cases it cannot express are SKIPPED with the reason, the others pass.
      opgate_in ASCEND_HOME_PATH="$STANDIN/legacy" -- run --cases "$SRC/cases/$OP/smoke.json" --backend ascend \
        --out "$WORK/legacy"
      expect $? 0 "SKIPPED .*this CANN serves the legacy aclnnMoeFFN, which has only the fp16/int8 fastgelu" \
        "legacy aclnnMoeFFN entry"
      grep -q "PASSED " "$WORK/out.txt" && ok || bad "no case passed through aclnnMoeFFN"
      grep -q '"moe_ffn":{"aclnn":"aclnnMoeFFN","library":"[^"]*/legacy/lib64/libopapi.so"' "$WORK/legacy/summary.txt" &&
        ok || bad "the report names aclnnMoeFFN and its library"
      # aclnnFFN's 19-parameter prototype exists from CANN 8.0.0: an older (or unreadable) version
      # without aclnnMoeFFN gives SKIPPED with the version, never a shifted-argument call.
      for version in 7.1.0 8.0.RC1 garbled; do
        rm -f "$T"
        opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_CANN_VERSION="$version" OPGATE_STANDIN_TRACE="$T" -- run \
          --cases "$SRC/cases/$OP/smoke.json" --backend ascend --out "$WORK/cann_$version"
        expect $? 0 "SKIPPED .*aclnnFFN is called with its 19-parameter CANN 8.0.0 prototype, and this CANN reports version '$version'" \
          "aclnnFFN on CANN $version"
        grep -qE "^\[ *[0-9]+/[0-9]+\] (PASSED|FAILED|BACKEND_ERROR)" "$WORK/out.txt" && bad "a case ran on CANN $version" || ok
        grep -q 'aclnnFFNGetWorkspaceSize' "$T" && bad "aclnnFFN was called on CANN $version" || ok
      done
      opgate_in ASCEND_HOME_PATH="$CANN" OPGATE_STANDIN_CANN_VERSION=8.0.0 -- run --cases "$SRC/cases/$OP/smoke.json" \
        --backend ascend --out "$WORK/cann_800" -q
      expect $? 0 "failed:0 .*skipped:0 .*backend_error:0" "aclnnFFN on CANN 8.0.0"
      # The legacy entry has one prototype in every version: a CANN 7 library that exports it is used.
      opgate_in ASCEND_HOME_PATH="$STANDIN/legacy" OPGATE_STANDIN_CANN_VERSION=7.1.0 -- run \
        --cases "$SRC/cases/$OP/smoke.json" --backend ascend --out "$WORK/legacy7"
      grep -q "PASSED " "$WORK/out.txt" && ok || bad "aclnnMoeFFN not used on CANN 7.1.0"
      ;;
    ffn_worker_batching)
      grep -q ' aclCreateIntArray \[' "$T" && ok || bad "no maxOutShape int array"
      grep -q 'side buffers bound' "$T" && ok || bad "the ScheduleContext carried no device pointers"
      ;;
  esac
  ;;
*)
  echo "unknown scenario $SCENARIO"; exit 2 ;;
esac

echo "ascend $SCENARIO: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
