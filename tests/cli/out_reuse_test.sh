#!/usr/bin/env bash
# A report folder is never reused by accident (issue 23): `run --out` on a folder that holds a
# report is refused unless --resume or --overwrite (which first removes the old report, failed/
# included, never through a link); and a closed stdout (`run | head -1`) stops the console output,
# not the run or its reports.
# Usage: out_reuse_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
SMOKE="$SRC/cases/moe_finalize_routing_v2_grad/smoke.json"
FAULT=fault:mfrg.scale_not_applied

"$OPGATE" run --cases "$SMOKE" --backend "$FAULT" --out "$WORK/r" --dump-failed -q >/dev/null 2>&1
check "the fault night fails" test $? -eq 1
nfailed=$(ls "$WORK/r/failed" | wc -l)
check "the fault night wrote failed/ files ($nfailed)" test "$nfailed" -gt 0
ndumps=$(find "$WORK/r/failed" -mindepth 1 -maxdepth 1 -type d | wc -l)
check "the fault night wrote tensor dumps in failed/ ($ndumps)" test "$ndumps" -gt 0
cp "$WORK/r/results.jsonl" "$WORK/results_before"
expect_error 2 "/r: holds a previous report; continue it with --resume, replace it with --overwrite" \
  run --cases "$SMOKE" --out "$WORK/r"
check "the refused run left results.jsonl as it was" cmp -s "$WORK/results_before" "$WORK/r/results.jsonl"
check "the refused run left failed/ as it was" test "$(ls "$WORK/r/failed" | wc -l)" -eq "$nfailed"

# --overwrite removes the old report first; a link in failed/ is removed, not followed; files
# opgate does not write stay.
echo keep >"$WORK/outside.json"
ln -s "$WORK/outside.json" "$WORK/r/failed/link.json"
echo mine >"$WORK/r/notes.txt"
# A dump folder holding a file opgate did not write keeps the file (and so its folder); a folder
# that is no dump stays whole.
dumped=$(find "$WORK/r/failed" -mindepth 1 -maxdepth 1 -type d | head -1)
echo mine >"$dumped/got/notes.txt"
mkdir "$WORK/r/failed/mine" && echo mine >"$WORK/r/failed/mine/README.txt"
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r" --overwrite -q >"$WORK/out.txt" 2>&1
check "--overwrite: the green run exits 0" test $? -eq 0
left=$(cd "$WORK/r/failed" && find . -mindepth 1 | sort | tr '\n' ' ')
want=$(cd "$WORK/r/failed" && printf '%s ' ./"$(basename "$dumped")" ./"$(basename "$dumped")"/got \
  ./"$(basename "$dumped")"/got/notes.txt ./mine ./mine/README.txt | tr ' ' '\n' | sort | tr '\n' ' ')
check "--overwrite: no stale failed/ file or tensor dump in the green report (left: $left)" test "$left" = "$want"
check "--overwrite: the file planted in a dump stays" grep -qx mine "$dumped/got/notes.txt"
check "--overwrite: the link's target is untouched" grep -qx keep "$WORK/outside.json"
check "--overwrite: a file opgate did not write stays" grep -qx mine "$WORK/r/notes.txt"
check "--overwrite: the summary holds this run only" grep -q "^cases:[0-9]* passed:[0-9]* failed:0 " "$WORK/r/summary.txt"
expect_error 2 "excludes" run --cases "$SMOKE" --out "$WORK/r" --overwrite --resume
mkdir "$WORK/empty"
"$OPGATE" run --cases "$SMOKE" --out "$WORK/empty" -q >/dev/null 2>&1
check "an existing empty folder is no report: the run uses it" test $? -eq 0

# `| head -1`: head leaves after the first line; the run must not die of SIGPIPE (exit 141).
"$OPGATE" run --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci --out "$WORK/piped" -j 1 | head -1 >/dev/null
code=${PIPESTATUS[0]}
check "run | head -1: not killed by SIGPIPE (exit $code, want 0)" test "$code" -eq 0
check "run | head -1: summary, junit and html are written" \
  test -s "$WORK/piped/summary.txt" -a -s "$WORK/piped/junit.xml" -a -s "$WORK/piped/report.html"
all=$("$OPGATE" list --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci 2>/dev/null | grep -c '^mfrg\.')
check "run | head -1: every case ($all) has its result" test "$(grep -c . "$WORK/piped/results.jsonl")" -eq "$all"

echo "out_reuse: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
