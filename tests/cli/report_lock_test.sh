#!/usr/bin/env bash
# A report folder that a run still writes (its run.lock held) is named as such by `baseline accept`
# (issue 23): before, an accept during the run said "no results: refusing an empty baseline", or
# accepted the part written so far. The lock is held here by flock(1), the same flock(2) lock
# that `opgate run` takes, with the holder line a run writes.
# Usage: report_lock_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
SMOKE="$SRC/cases/ffn_worker_batching/smoke.json"
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r" -q >/dev/null 2>&1
check "the run passes" test $? -eq 0
holder="pid 4242 on host gate-7 since 2026-12-02T01:00:00Z"
printf '%s\n' "$holder" >"$WORK/r/run.lock"
# The locking process becomes the sleep itself (exec), so killing it releases the lock.
( exec 9<>"$WORK/r/run.lock" && flock 9 && exec sleep 60 ) &
locker=$!
trap 'kill $locker 2>/dev/null' EXIT
for _ in $(seq 50); do flock -n "$WORK/r/run.lock" true 2>/dev/null || break; sleep 0.1; done

expect_error 2 "r: being written by $holder" baseline accept "$WORK/r" --to "$WORK/base"
check "nothing accepted while the run writes" test ! -e "$WORK/base"
: >"$WORK/r/results.jsonl"  # a run that has not finished its first case
expect_error 2 "r: being written by $holder" baseline accept "$WORK/r" --to "$WORK/base"
kill $locker 2>/dev/null; wait $locker 2>/dev/null
expect_error 2 "results.jsonl: no results: refusing an empty baseline" baseline accept "$WORK/r" --to "$WORK/base"

echo "report lock: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
