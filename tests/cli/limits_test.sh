#!/usr/bin/env bash
# Requests inside the accepted ranges that the machine cannot grant (issue 23): --threads 4096
# under a 2 GB address-space limit (ulimit -v: each thread's stack is address space). The threads
# that start do the work (results do not depend on the count), one warning says so, and the run
# ends with its verdicts and reports; before, the case child aborted (CRASHED) and an in-process
# run died of std::terminate (exit 134) leaving a report folder without summary.
# Usage: limits_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
CASES="$SRC/cases/incre_flash_attention_v3/ci.json"
limited() { (ulimit -v 2000000 && "$OPGATE" "$@"); }

limited run --cases "$CASES" --threads 4096 --no-isolate --out "$WORK/inproc" -q >"$WORK/inproc.txt" 2>&1
rc=$?
check "in-process, --threads 4096 under ulimit -v 2 GB: exit 0 (got $rc): $(tail -2 "$WORK/inproc.txt")" test "$rc" -eq 0
check "in-process: one warning names the threads that started" \
  test "$(grep -c '^opgate: warning: [0-9]* of [0-9]* threads started' "$WORK/inproc.txt")" -eq 1
check "in-process: summary.txt written" test -s "$WORK/inproc/summary.txt"
limited run --cases "$CASES" --threads 4096 -j 2 --out "$WORK/isolated" -q >"$WORK/isolated.txt" 2>&1
rc=$?
check "case children, --threads 4096 under ulimit -v 2 GB: exit 0 (got $rc): $(tail -2 "$WORK/isolated.txt")" test "$rc" -eq 0
check "case children: nothing CRASHED" grep -q ' crashed:0$' "$WORK/isolated/summary.txt"

echo "limits: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
