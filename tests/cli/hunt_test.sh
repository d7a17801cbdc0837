#!/usr/bin/env bash
# `opgate hunt` end to end (issue 22): on the clean emulator a hunt of FfnWorkerBatching (exact
# outputs: no case may fail) exits 0, prints and saves the margin table and a worst case per
# output, each a case file that replays and passes; on a fault backend the hunt exits 1 and saves
# the failing cases, which replay as failures on that backend and pass on emu.
# Usage: hunt_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
OP=ffn_worker_batching
"$OPGATE" hunt --op "$OP" --evaluations 40 --seed 3 --out "$WORK/emu" >"$WORK/emu.txt" 2>&1
check "hunt on emu exits 0: $(tail -2 "$WORK/emu.txt")" test $? -eq 0
check "the margin table has a row per output (random, hunted)" grep -qE '^y +[0-9.e+-]+ +[0-9.e+-]+$' "$WORK/emu.txt"
check "margins.txt is the printed table" grep -qE '^tokenIds ' "$WORK/emu/margins.txt"
check "a worst case per output" test "$(ls "$WORK/emu/worst" | wc -l)" -eq "$(($(wc -l <"$WORK/emu/margins.txt") - 1))"
"$OPGATE" run --cases "$WORK/emu/worst/y.json" --strict --out "$WORK/replay_worst" -q >"$WORK/replay.txt" 2>&1
check "the worst case of y replays and passes: $(head -1 "$WORK/replay.txt")" test $? -eq 0

FAULT=fault:fwb.masked_counted
"$OPGATE" hunt --op "$OP" --backend "$FAULT" --evaluations 40 --seed 3 --out "$WORK/fault" >"$WORK/fault.txt" 2>&1
check "hunt on $FAULT exits 1" test $? -eq 1
check "hunt on $FAULT says how many cases failed" grep -qE '^[0-9]+ case\(s\) failed; the first [0-9]+ saved in ' "$WORK/fault.txt"
one=$(ls "$WORK/fault/failed" | head -1)
check "the failing cases are saved" test -n "$one"
"$OPGATE" run --cases "$WORK/fault/failed/$one" --backend "$FAULT" --out "$WORK/replay_fault" -q >/dev/null 2>&1
check "a saved failing case fails again on $FAULT" test $? -eq 1
"$OPGATE" run --cases "$WORK/fault/failed/$one" --out "$WORK/replay_emu" -q >/dev/null 2>&1
check "and passes on emu" test $? -eq 0
expect_error 2 "unknown operator|operator" hunt --op no_such_op --evaluations 1 --out "$WORK/bad"

echo "hunt: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
