#!/usr/bin/env bash
# What pytest and ctest users reach for after a red night: -x / --max-failures N stop early (the
# report holds what ran, --resume runs the rest), --last-failed REPORT reruns exactly a report's
# failing cases, and the repro line can be pasted into a shell anywhere on the machine.
# Usage: rerun_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
FAULT=fault:mfrg.scale_not_applied
run() { "$OPGATE" run --root "$SRC" "$@" >"$WORK/out.txt" 2>&1; }
ids() { python3 -c "
import json, sys
print(' '.join(sorted(json.loads(l)['id'] for l in open(sys.argv[1]) if l.strip()
               and (len(sys.argv) < 3 or json.loads(l)['verdict'] == sys.argv[2]))))" "$@"; }

# -x: the first failing case ends the run; every case before it ran.
run --op moe_finalize_routing_v2_grad --tier ci --backend "$FAULT" -x -q --out "$WORK/x"
check "-x: exit 1" test $? -eq 1
check "-x: exactly one failing case in the report" test "$(grep -c '"verdict":"FAILED"' "$WORK/x/results.jsonl")" -eq 1
check "-x: the failing case is the last one run" \
  test "$(tail -1 "$WORK/x/results.jsonl" | grep -c '"verdict":"FAILED"')" -eq 1
check "-x: says so, with the command for the rest" grep -q "stopped after 1 failing case(s) (--max-failures 1).*run --resume --out" "$WORK/out.txt"
check "-x: the reports are written" test -s "$WORK/x/junit.xml" -a -s "$WORK/x/report.html"
# --resume without -x runs the rest: the report then holds every case once.
run --op moe_finalize_routing_v2_grad --tier ci --backend "$FAULT" -q --out "$WORK/x" --resume
all=$("$OPGATE" list --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci 2>/dev/null | grep -c '^mfrg\.')
check "-x then --resume: every case once ($all)" test "$(grep -c . "$WORK/x/results.jsonl")" -eq "$all"

# --max-failures 3
run --op moe_finalize_routing_v2_grad --tier ci --backend "$FAULT" --max-failures 3 -q --out "$WORK/m3"
check "--max-failures 3: exit 1" test $? -eq 1
check "--max-failures 3: three failing cases" test "$(grep -c '"verdict":"FAILED"' "$WORK/m3/results.jsonl")" -eq 3

# --last-failed: exactly the failing ids of the report, from its failed/<id>.json.
run --op moe_finalize_routing_v2_grad --tier ci --backend "$FAULT" -q --out "$WORK/full"
run --last-failed "$WORK/full" --backend "$FAULT" -q --out "$WORK/lf"
check "--last-failed: exit 1 (they still fail)" test $? -eq 1
check "--last-failed: the same ids as the report's failures" \
  test "$(ids "$WORK/lf/results.jsonl")" = "$(ids "$WORK/full/results.jsonl" FAILED)"
# A rerun tests what the report tested: without --backend, the report's fault backend (issue 23:
# the default emu turned a red night's failures green, exit 0, no warning).
run --last-failed "$WORK/full" -q --out "$WORK/lf-own"
check "--last-failed without --backend: exit 1 (the report's backend)" test $? -eq 1
check "--last-failed without --backend: the same failures" \
  test "$(ids "$WORK/lf-own/results.jsonl" FAILED)" = "$(ids "$WORK/full/results.jsonl" FAILED)"
check "--last-failed without --backend: run.json records the report's backend" grep -q "\"$FAULT\"" "$WORK/lf-own/run.json"
check "--last-failed with the report's backend: no override line" test "$(grep -c overrides "$WORK/out.txt")" -eq 0
one_failed=$(ls "$WORK/full/failed" | head -1)
"$OPGATE" repro --root "$SRC" "$WORK/full/failed/$one_failed" >"$WORK/repro.txt" 2>&1
check "repro of a failed/<id>.json without --backend: exit 1 (the report's backend)" test $? -eq 1
"$OPGATE" repro --root "$SRC" "$WORK/full/failed/$one_failed" --backend emu >"$WORK/repro.txt" 2>&1
check "repro --backend emu of a fault report's case: exit 0" test $? -eq 0
check "repro --backend emu names the override" grep -q "^opgate: --backend emu overrides the report's $FAULT" "$WORK/repro.txt"
run --last-failed "$WORK/lf/results.jsonl" --backend emu -q --out "$WORK/fixed"
check "--last-failed on the fixed kernel: exit 0" test $? -eq 0
check "--last-failed --backend emu names the override, once" \
  test "$(grep -c "^opgate: --backend emu overrides the report's $FAULT" "$WORK/out.txt")" -eq 1
run --last-failed "$WORK/fixed" -q --out "$WORK/none"
check "--last-failed of a green report: exit 0, nothing run" test $? -eq 0 -a ! -e "$WORK/none"
check "--last-failed of a green report says so" grep -q "no failing case; nothing to rerun" "$WORK/out.txt"
expect_error 2 "no-such-report: no such report" run --last-failed "$WORK/no-such-report"
rm "$WORK/full/failed/$(ls "$WORK/full/failed" | head -1)"
expect_error 2 "--last-failed .*failed/.*is missing" run --last-failed "$WORK/full"

# The repro line: an absolute binary and case path; pasted into a shell elsewhere it reruns the case.
run --op moe_finalize_routing_v2_grad --tier ci --backend "$FAULT" --max-failures 1 --out "$WORK/r"
line=$(grep -m1 'repro: ' "$WORK/out.txt" | sed 's/^ *repro: //')
check "the repro line starts with this binary's absolute path" test "${line%% *}" = "$(realpath "$OPGATE")"
check "the repro line names the case file by its absolute path" \
  test "$(echo "$line" | awk '{print $3}')" = "$(realpath "$SRC")/cases/moe_finalize_routing_v2_grad/ci.json"
(cd / && eval "$line" >"$WORK/pasted.txt" 2>&1)
check "pasted from /, the repro reruns the failure (exit 1)" test $? -eq 1
check "pasted from /, the repro prints the failing case" grep -q "FAILED" "$WORK/pasted.txt"

echo "rerun: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
