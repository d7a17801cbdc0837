#!/usr/bin/env bash
# The files behind a report and a history are what they seem (issue 23): an --out that is a
# symbolic link is refused (before: followed, the report written into its target); a resume
# never appends to a results.jsonl that has another name (a hard link: before, that name changed
# too); a resume whose folder holds results of cases the run no longer selects is refused (before:
# kept, "cases:7" for 6 cases); a history that is a FIFO is refused at once (before: blocked).
# Usage: report_files_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
SMOKE="$SRC/cases/ffn_worker_batching/smoke.json"

# --- an --out that is a link ---
mkdir -p "$WORK/real"
ln -s "$WORK/real" "$WORK/link"
expect_error 2 "link: a symbolic link; opgate writes a report only into a real folder" \
  run --cases "$SMOKE" --out "$WORK/link" -q
expect_error 2 "a symbolic link; opgate writes a report only into a real folder" run --cases "$SMOKE" --out "$WORK/link/" -q
check "nothing written into the link's target" test -z "$(ls -A "$WORK/real")"

# --- a resume into a results.jsonl with a second name ---
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r" -q >/dev/null 2>&1
check "a first run" test $? -eq 0
ln "$WORK/r/results.jsonl" "$WORK/other.jsonl"
before=$(cat "$WORK/other.jsonl")
expect_error 2 "results.jsonl: has 2 hard links" run --cases "$SMOKE" --out "$WORK/r" --resume -q
check "the other name is unchanged" test "$(cat "$WORK/other.jsonl")" = "$before"
rm "$WORK/other.jsonl"

# --- a resume whose case file lost a case ---
python3 -c "import json, sys; d = json.load(open(sys.argv[1])); json.dump(d, open(sys.argv[2], 'w'))" "$SMOKE" "$WORK/mine.json"
"$OPGATE" run --cases "$WORK/mine.json" --out "$WORK/r2" -q >/dev/null 2>&1
gone=$(python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(d['cases'][-1]['id']); d['cases'].pop(); json.dump(d, open(sys.argv[1], 'w'))" "$WORK/mine.json")
expect_error 2 "results.jsonl: holds a result of case '$gone', which this run does not select" \
  run --cases "$WORK/mine.json" --out "$WORK/r2" --resume -q

# --- a history that is a FIFO ---
mkfifo "$WORK/fifo.db"
timeout 20 "$OPGATE" history --db "$WORK/fifo.db" cases >"$WORK/fifo.txt" 2>&1
rc=$?
check "history --db FIFO: exit 2 at once (got $rc): $(cat "$WORK/fifo.txt")" test "$rc" -eq 2
check "history --db FIFO: named as not a regular file" grep -q "fifo.db: not a regular file" "$WORK/fifo.txt"
timeout 20 "$OPGATE" run --cases "$SMOKE" -q --history "$WORK/fifo.db" --out "$WORK/r3" >"$WORK/fifo_run.txt" 2>&1
rc=$?
check "run --history FIFO: exit 2 at once (got $rc)" test "$rc" -eq 2
check "run --history FIFO: no report folder" test ! -e "$WORK/r3"

echo "report files: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
