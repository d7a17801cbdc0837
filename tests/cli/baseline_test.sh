#!/usr/bin/env bash
# End-to-end tests of `baseline accept` and `baseline diff` on real report folders: what accept
# refuses (unfinished runs, single shards) and records (configuration, absolute origin), report
# arguments given as a folder or its results.jsonl, and the warning for another configuration.
# Usage: baseline_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
json_check() {  # json_check <file> <python expression on m>: the expression must hold
  python3 -c "import json, sys; m = json.load(open(sys.argv[1])); assert $2, m" "$1"
}
SMOKE="$SRC/cases/moe_finalize_routing_v2_grad/smoke.json"
FAULT=fault:mfrg.k_major_index

"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_emu" -q >/dev/null 2>&1
check "the emu run passes" test $? -eq 0

# --- accept refuses what would hide cases, and writes nothing then ---
rm -rf "$WORK/r_cut"; cp -r "$WORK/r_emu" "$WORK/r_cut"
head -n -1 "$WORK/r_emu/results.jsonl" >"$WORK/r_cut/results.jsonl"
expect_error 2 "r_cut: unfinished run: [0-9]+ of [0-9]+ cases have results" \
  baseline accept "$WORK/r_cut" --to "$WORK/base_cut"
check "no baseline from an unfinished run" test ! -e "$WORK/base_cut"
"$OPGATE" run --cases "$SMOKE" --shard 0/2 --out "$WORK/s0" -q >/dev/null 2>&1
"$OPGATE" run --cases "$SMOKE" --shard 1/2 --out "$WORK/s1" -q >/dev/null 2>&1
expect_error 2 "s0/run.json: a single shard .*merge the shards first with \`opgate merge\`" \
  baseline accept "$WORK/s0" --to "$WORK/base_shard"
check "no baseline from a single shard" test ! -e "$WORK/base_shard"
expect_error 2 "nowhere: no such report" baseline accept "$WORK/nowhere" --to "$WORK/base_none"
check "no baseline from a missing report" test ! -e "$WORK/base_none"

# --- accept takes a merged report, or a results.jsonl, and records where it came from ---
"$OPGATE" merge "$WORK/s0" "$WORK/s1" --out "$WORK/merged" >/dev/null 2>&1
check "the shards merge" test $? -eq 0
"$OPGATE" baseline accept "$WORK/merged" --to "$WORK/base_merged" >/dev/null 2>&1
check "a merged report is accepted" test $? -eq 0
(cd "$WORK" && "$OPGATE" baseline accept r_emu/results.jsonl --to base >/dev/null 2>&1)
check "a results.jsonl path is accepted" test $? -eq 0
check "the baseline holds the report's results" cmp -s "$WORK/r_emu/results.jsonl" "$WORK/base/results.jsonl"
check "baseline.json records the configuration and an absolute origin" json_check "$WORK/base/baseline.json" \
  "m['backend'] == 'emu' and m['repeat'] == 1 and m['against'] == 'reference' and m['accepted_from'] == '$(cd "$WORK" && pwd -P)/r_emu'"

# --- diff: the report argument is a report, as a folder or its results.jsonl ---
expect_error 2 "nowhere: no such report" baseline diff "$WORK/base" "$WORK/nowhere"
"$OPGATE" baseline diff "$WORK/base" "$WORK/merged/results.jsonl" >"$WORK/diff.txt" 2>"$WORK/diff_err.txt"
check "a results.jsonl report is judged" test $? -eq 0
check "with nothing on stderr" test ! -s "$WORK/diff_err.txt"
check "baseline.txt is written beside the results.jsonl" grep -q "^baseline .*new_failure:0 missing:0" "$WORK/merged/baseline.txt"
check "report.html gains the baseline section" grep -q 'id="baseline"' "$WORK/merged/report.html"

# --- diff: a report of another backend is compared, with one warning ---
"$OPGATE" run --cases "$SMOKE" --backend "$FAULT" --out "$WORK/r_fault" -q >/dev/null 2>&1
"$OPGATE" baseline diff "$WORK/base" "$WORK/r_fault" >"$WORK/diff.txt" 2>"$WORK/diff_err.txt"
check "new failures on the fault backend fail the gate" test $? -eq 1
check "one warning line on stderr" test "$(wc -l <"$WORK/diff_err.txt")" -eq 1
check "the warning names both configurations" grep -qE \
  "^opgate: warning: .*base/baseline.json: the baseline has backend \"emu\", but .*r_fault/run.json has backend \"$FAULT\"" \
  "$WORK/diff_err.txt"

echo "baseline tests: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
