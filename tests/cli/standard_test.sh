#!/usr/bin/env bash
# Ascend's standards in a run (issue 25): every output's results carry ascend-v0.3 and
# ascend-dual-permille beside the gate, summary.txt and report.html tabulate them, and
# `--standard NAME` makes one of them gate (recorded in run.json, kept by the repro line and by
# --resume). The gate really switches: ifa.fp16_pv_accumulation fails bound's ci night but passes
# ascend-v0.3's (its P x V error stays within 2^-7), while the old standard's share catches it.
# Usage: standard_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
PV=fault:ifa.fp16_pv_accumulation
# The range-edge cases with V at the fp16 top are left out of the v0.3 runs: an fp16 PV
# accumulator overflows there to Inf, which every standard fails (as it should).
NOT_TOP='^(?!ifa\.edge_near_max)'

"$OPGATE" run --op mfrg --tier ci --strict -q --out "$WORK/emu" >/dev/null 2>&1
check "clean emu, bound: exit 0" test $? -eq 0
check "results.jsonl: each tolerance output carries ascend-v0.3" grep -qE '"ascend-v0.3":\{"applies":true,"detail":"[^"]*","passed":true' "$WORK/emu/results.jsonl"
check "summary.txt: the standards block" grep -q '^standards per output' "$WORK/emu/summary.txt"
check "summary.txt: gradScalesOut under ascend-v0.3" grep -qE '^  moe_finalize_routing_v2_grad gradScalesOut: .*ascend-v0.3 [0-9]+ passed' "$WORK/emu/summary.txt"
check "on emu dual-benchmark is not applicable" grep -q '"dual-benchmark":{"applies":false,"detail":"not applicable: the device is the emulator' "$WORK/emu/results.jsonl"
check "report.html: the standards table" grep -q '<table id="standards">' "$WORK/emu/report.html"

for s in ascend-v0.3 ascend-dual-permille; do
  "$OPGATE" run --op mfrg --tier ci --strict -q --standard "$s" --out "$WORK/$s" >/dev/null 2>&1
  check "clean emu, --standard $s: exit 0 (vacuity checked under it, --strict)" test $? -eq 0
  check "run.json records --standard $s" grep -q "\"standard\": \"$s\"" "$WORK/$s/run.json"
done
"$OPGATE" run --op mfrg --tier ci -q --standard ascend-v0.3 --backend fault:mfrg.scale_not_applied --out "$WORK/scale" >/dev/null 2>&1
check "--standard ascend-v0.3 catches mfrg.scale_not_applied: exit 1" test $? -eq 1
check "the repro line keeps --standard" grep -q -- '--standard ascend-v0.3' "$WORK/scale/summary.txt"
check "the failing output is judged under ascend-v0.3" grep -q '"standard":"ascend-v0.3"' "$WORK/scale/results.jsonl"

"$OPGATE" run --op ifa --tier ci -q --backend "$PV" --out "$WORK/pv_bound" >/dev/null 2>&1
check "$PV under bound: exit 1" test $? -eq 1
check "on a fault backend the emulator twin judges dual-benchmark" grep -q '"dual-benchmark":{"applies":true' "$WORK/pv_bound/results.jsonl"
check "... and it fails some of $PV's cases" grep -qE '"dual-benchmark":\{"applies":true,"detail":"[^"]*","passed":false' "$WORK/pv_bound/results.jsonl"
"$OPGATE" run --op ifa --tier ci -q --backend "$PV" --standard ascend-v0.3 --filter "$NOT_TOP" --out "$WORK/pv_v03" >/dev/null 2>&1
check "$PV under ascend-v0.3: exit 0 (v0.3 allows its error)" test $? -eq 0
"$OPGATE" run --op ifa --tier ci -q --backend "$PV" --standard ascend-dual-permille --out "$WORK/pv_permille" >/dev/null 2>&1
check "$PV under ascend-dual-permille: exit 1" test $? -eq 1

# --resume must run under the recorded standard.
head -1 "$WORK/pv_v03/results.jsonl" >"$WORK/first" && mv "$WORK/first" "$WORK/pv_v03/results.jsonl"
expect_error 2 'cannot resume: standard was "ascend-v0.3", this run has unset' \
  run --op ifa --tier ci -q --backend "$PV" --filter "$NOT_TOP" --resume --out "$WORK/pv_v03"
"$OPGATE" run --op ifa --tier ci -q --backend "$PV" --standard ascend-v0.3 --filter "$NOT_TOP" --resume --out "$WORK/pv_v03" >/dev/null 2>&1
check "--resume of the v0.3 night under ascend-v0.3: exit 0" test $? -eq 0

expect_error 2 "--standard: bogus not in" run --op mfrg --standard bogus
expect_error 2 "--standard: allclose not in" run --op mfrg --standard allclose

echo "standard: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
