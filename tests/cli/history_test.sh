#!/usr/bin/env bash
# End-to-end tests of the run history: three recorded runs (pass, fail, pass under one kernel rev)
# make `history flaky` name the flipping case and `trend` print its budget over the three runs; a
# run killed with -9 leaves a consistent database that the next run extends; two shards started
# at once both land all their cases; bad input is one error line and exit 2.
# Usage: history_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
sql() {  # sql <db> <query>: the first column of each row (python3's sqlite3, not opgate's code)
  python3 -c "import sqlite3, sys; [print(r[0]) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])]" "$1" "$2"
}
SMOKE="$SRC/cases/moe_finalize_routing_v2_grad/smoke.json"
CASE=mfrg.bias_scales_dropless.bf16.001  # gradScalesOut is a bound output: its budget_used moves
DB="$WORK/h.db"

# --- three runs, one kernel rev: pass, fail (a defect), pass ---
"$OPGATE" run --cases "$SMOKE" --filter "^$CASE\$" --history "$DB" --kernel-rev rev1 --out "$WORK/r1" -q >"$WORK/r1.log" 2>&1
check "run 1 passes" test $? -eq 0
"$OPGATE" run --cases "$SMOKE" --filter "^$CASE\$" --history "$DB" --kernel-rev rev1 --out "$WORK/r2" -q \
  --backend fault:mfrg.k_major_index >"$WORK/r2.log" 2>&1
check "run 2 fails" test $? -eq 1
OPGATE_HISTORY="$DB" "$OPGATE" run --cases "$SMOKE" --filter "^$CASE\$" --kernel-rev rev1 --out "$WORK/r3" -q >"$WORK/r3.log" 2>&1
check "run 3 passes (history from OPGATE_HISTORY)" test $? -eq 0
check "three runs, ended, with exit codes 0 1 0" test "$(sql "$DB" "SELECT exit_code FROM runs WHERE ended_at IS NOT NULL ORDER BY run_id" | tr '\n' ' ')" = "0 1 0 "

"$OPGATE" history --db "$DB" flaky >"$WORK/flaky.txt" 2>&1
check "flaky exits 0" test $? -eq 0
# Run 2 ran on a fault backend: another device, so the case did not flip (each device kept its verdict).
check "flaky: a fault night beside emu nights is not a flip" \
  grep -qx "no case changed its verdict between runs of one kernel rev on one backend" "$WORK/flaky.txt"
check "flaky prints one line" test "$(wc -l <"$WORK/flaky.txt")" -eq 1
"$OPGATE" history --db "$DB" runs >"$WORK/runs.txt" 2>&1
check "runs: three lines, exit codes 0 1 0, the fault backend named" \
  test "$(awk '{print $1, $5, $8}' "$WORK/runs.txt" | tr '\n' ';')" = "1 emu 0;2 fault:mfrg.k_major_index 1;3 emu 0;"
check "runs: each run judged one case" test "$(grep -c '  exit [01]  1 case: 1 \(PASSED\|FAILED\)$' "$WORK/runs.txt")" -eq 3

"$OPGATE" history --db "$DB" trend --case "$CASE" --output gradScalesOut >"$WORK/trend.txt" 2>&1
check "trend exits 0" test $? -eq 0
check "trend has a header and three runs" test "$(grep -cE '^ +[123]  ' "$WORK/trend.txt")" -eq 3
check "trend marks run 2's failed output" grep -qE '^ +2  .*FAILED +[0-9.]+\*$' "$WORK/trend.txt"
check "trend draws a sparkline low-high-low" grep -qx "gradScalesOut  ▁█▁" "$WORK/trend.txt"
# Its numbers are the runs' own results.jsonl budget_used, read independently.
OPGATE_HISTORY="$DB" "$OPGATE" history trend --case "$CASE" --json >"$WORK/trend.json" 2>&1
check "trend --json equals budget_used in each run's results.jsonl" python3 - "$WORK" "$CASE" <<'PY'
import json, sys
work, case = sys.argv[1], sys.argv[2]
trend = json.load(open(f"{work}/trend.json"))
assert [p["run"]["run_id"] for p in trend["points"]] == [1, 2, 3], trend
for run, point in zip(["r1", "r2", "r3"], trend["points"]):
    result = [json.loads(l) for l in open(f"{work}/{run}/results.jsonl") if json.loads(l)["id"] == case][0]
    want = {o["name"]: o["metrics"]["budget_used"] for o in result["outputs"]}
    assert point["budget_used"] == want, (run, point["budget_used"], want)
    assert point["verdict"] == result["verdict"]
assert trend["points"][1]["budget_used"]["gradScalesOut"] > 1 > trend["points"][0]["budget_used"]["gradScalesOut"]
PY
"$OPGATE" history --db "$DB" cases >"$WORK/cases.txt" 2>&1
check "no case fails now" grep -qx "no case is failing" "$WORK/cases.txt"
"$OPGATE" history --db "$DB" first-bad --case "$CASE" >"$WORK/fb.txt" 2>&1
check "first-bad: not failing" grep -q "^$CASE: not failing (latest: PASSED in run 3 " "$WORK/fb.txt"

# A fourth run fails under a new rev: the streak starts there, the last good run is run 3.
"$OPGATE" run --cases "$SMOKE" --filter "^$CASE\$" --history "$DB" --kernel-rev rev2 --out "$WORK/r4" -q \
  --backend fault:mfrg.k_major_index >/dev/null 2>&1
"$OPGATE" history --db "$DB" first-bad --case "$CASE" >"$WORK/fb.txt" 2>&1
check "first-bad: run 4" grep -q "^  first bad: FAILED in run 4 (.*, kernel rev rev2, fault:mfrg.k_major_index): " "$WORK/fb.txt"
# report.html of a recorded failing run charts each failing output over the recorded runs: run 4's
# gradScalesOut has four points, the second and fourth red (failed), the others green: passed,
# failed, passed, failed is three flips, a flaky trend.
check "report.html: a trends section" grep -q 'id="trends"' "$WORK/r4/report.html"
check "report.html: the failing case's gradScalesOut trend over 4 runs" \
  python3 -c "
import re, sys
html = open(sys.argv[1]).read()
row = re.search(r'<tr class=\"trend\" data-id=\"$CASE\"><td><code>$CASE</code></td><td>gradScalesOut</td><td>flaky \\(3 flips\\)</td>(.*?)</tr>', html)
fills = re.findall(r'<circle[^>]*fill=\"(#[0-9a-f]+)\"><title>run (\\d+)', row.group(1)) if row else []
sys.exit(0 if [f for f, _ in fills] == ['#2e7d32', '#c62828', '#2e7d32', '#c62828'] else 1)" "$WORK/r4/report.html"
check "first-bad: the revs around it" grep -qx "  kernel revs: last good rev1, first bad rev2" "$WORK/fb.txt"
"$OPGATE" history --db "$DB" cases --failing-since 4 >"$WORK/cases.txt" 2>&1
check "cases --failing-since 4 lists the case" grep -qE "^$CASE +FAILED +1  run 4 " "$WORK/cases.txt"
"$OPGATE" history --db "$DB" cases --failing-since 5 >"$WORK/cases.txt" 2>&1
expect_error 2 "h.db: --failing-since: no run 5" history --db "$DB" cases --failing-since 5

# --- kill -9 in the middle of a recorded run: consistent, marked interrupted, extended next ---
KDB="$WORK/killed.db"
"$OPGATE" run --root "$SRC" --history "$KDB" --kernel-rev rev1 --out "$WORK/rk" -q >"$WORK/rk.log" 2>&1 &
pid=$!
python3 - "$KDB" <<'PY'
import sqlite3, sys, time
deadline = time.time() + 60
while time.time() < deadline:
    try:
        # Read-only: the poll must not create the file before opgate does.
        ro = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=5)
        if ro.execute("SELECT count(*) FROM results").fetchone()[0] >= 3:
            break
    except sqlite3.Error:
        pass
    time.sleep(0.01)
PY
kill -9 "$pid"; wait "$pid" 2>/dev/null
check "the killed run never ended" test "$(sql "$KDB" "SELECT count(*) FROM runs WHERE ended_at IS NULL")" -eq 1
recorded=$(sql "$KDB" "SELECT count(*) FROM results")
check "the killed run kept some cases ($recorded)" test "$recorded" -ge 3
check "every recorded case has its outputs" test "$(sql "$KDB" "SELECT count(*) FROM results r WHERE NOT EXISTS (SELECT 1 FROM outputs o WHERE o.case_pk = r.case_pk AND o.run_id = r.run_id) AND r.verdict = 'PASSED'")" -eq 0
check "integrity_check is ok" test "$(sql "$KDB" "PRAGMA integrity_check")" = ok
"$OPGATE" history --db "$KDB" first-bad --case fwb.norm_mixed_masks.f16.001 >"$WORK/killed.txt" 2>&1
check "the killed run reads as interrupted" grep -q "kernel rev rev1, emu, interrupted))" "$WORK/killed.txt"
"$OPGATE" run --cases "$SMOKE" --history "$KDB" --out "$WORK/rk2" -q >"$WORK/rk2.log" 2>&1
check "the next run opens the database" test $? -eq 0
check "and extends it" test "$(sql "$KDB" "SELECT count(*) FROM runs WHERE run_id = 2 AND ended_at IS NOT NULL")" -eq 1
check "still consistent" test "$(sql "$KDB" "PRAGMA integrity_check")" = ok

# --- two shards started at once on one database ---
SDB="$WORK/shards.db"
CI="$SRC/cases/moe_finalize_routing_v2_grad/ci.json"
"$OPGATE" run --cases "$CI" --shard 0/2 --history "$SDB" --out "$WORK/s0" -q >"$WORK/s0.log" 2>&1 &
p0=$!
"$OPGATE" run --cases "$CI" --shard 1/2 --history "$SDB" --out "$WORK/s1" -q >"$WORK/s1.log" 2>&1 &
p1=$!
wait $p0; r0=$?; wait $p1; r1=$?
check "both shards pass" test "$r0$r1" = 00
in_reports=$(cat "$WORK/s0/results.jsonl" "$WORK/s1/results.jsonl" | wc -l)
check "both shards land all their cases ($in_reports)" test "$(sql "$SDB" "SELECT count(*) FROM results")" -eq "$in_reports"
check "the shards are recorded" test "$(sql "$SDB" "SELECT group_concat(shard, ' ') FROM (SELECT shard FROM runs ORDER BY shard)")" = "0/2 1/2"

# --- bad input: one line, exit 2 ---
expect_error 2 "nowhere.db: no such history database" history --db "$WORK/nowhere.db" flaky
check "a query creates nothing" test ! -e "$WORK/nowhere.db"
echo "just text, not a database at all, long enough to have a header's worth of bytes in it......" >"$WORK/text.db"
expect_error 2 "text.db: not an SQLite database" history --db "$WORK/text.db" cases
expect_error 2 "text.db: not an SQLite database" run --cases "$SMOKE" --history "$WORK/text.db" --out "$WORK/r_text"
check "a run refused for its history writes no report" test ! -e "$WORK/r_text"
cp "$DB" "$WORK/corrupt.db"
python3 - "$WORK/corrupt.db" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(4096); size = len(f.read()); f.seek(4096); f.write(b"\xa5" * size)
PY
expect_error 2 "corrupt.db: corrupt history database" history --db "$WORK/corrupt.db" flaky
expect_error 2 "h.db: no results for case 'no.such.case'" history --db "$DB" trend --case no.such.case
expect_error 2 "h.db: no results for case 'no.such.case'" history --db "$DB" first-bad --case no.such.case
expect_error 2 "--failing-since: expected a run id or a UTC date" history --db "$DB" cases --failing-since yesterday
# Shaped like a date, but no day of the calendar (issue 23: all three were accepted).
for bad in 2026-13-45 2026-02-30 2026-12-01T25:00:00Z 2026-12-01T18:60Z; do
  expect_error 2 "--failing-since: '$bad' is no UTC date: (month|day|hour|minute)" history --db "$DB" cases --failing-since "$bad"
done
"$OPGATE" history --db "$DB" cases --failing-since 2024-02-29T23:59:59Z >/dev/null 2>&1
check "--failing-since 2024-02-29T23:59:59Z (a leap day) is a date" test $? -eq 0
python3 -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE t (a)'); c.execute('PRAGMA application_id = 1330726728'); c.execute('PRAGMA user_version = 9'); c.commit()" "$WORK/newer.db"
expect_error 2 "newer.db: history schema version 9 is newer than this opgate's \(1\)" history --db "$WORK/newer.db" flaky
expect_error 2 "newer.db: history schema version 9 is newer than this opgate's \(1\)" run --cases "$SMOKE" --history "$WORK/newer.db" --out "$WORK/r_newer"
# Without --history the kernel rev is still the report's: an archived report names the kernels it judged.
"$OPGATE" run --cases "$SMOKE" --filter "^$CASE\$" --kernel-rev abc --out "$WORK/r_rev" -q >"$WORK/r_rev.log" 2>&1
check "--kernel-rev without --history is recorded in run.json" grep -q '"kernel_rev": "abc"' "$WORK/r_rev/run.json"
check "... and in summary.txt" grep -q '^kernel rev abc ' "$WORK/r_rev/summary.txt"

if [ "$failures" -ne 0 ]; then  # what the checks read, for a failure seen only under load
  for f in r1 r2 r3 rk rk2 s0 s1; do echo "== $f.log"; tail -n 3 "$WORK/$f.log"; done
  for f in flaky trend cases fb killed; do echo "== $f.txt"; cat "$WORK/$f.txt"; done
  echo "== killed.db runs"; sql "$KDB" "SELECT run_id || ' ' || ifnull(ended_at, 'NULL') || ' ' || (SELECT count(*) FROM results r WHERE r.run_id = runs.run_id) FROM runs"
fi
echo "history tests: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
