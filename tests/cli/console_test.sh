#!/usr/bin/env bash
# The terminal of a red ci night is made for people (issue 24): one short line per passing case
# (each output's check only with -v), an end list "failed cases (N):" of every failed id with its
# repro, a totals line with the wall time, and colour only on a terminal (script(1) gives one) unless
# NO_COLOR or CI is set or --color says otherwise. Usage: console_test.sh <opgate> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
esc=$'\e'
red="$esc[1;31m"
DEFECT=fault:mfrg.k_major_index
env -u NO_COLOR -u CI "$OPGATE" run --root "$SRC" --tier ci --backend "$DEFECT" --out "$WORK/red" >"$WORK/pipe.txt" 2>&1
check "the red night exits 1" test $? -eq 1

# Passing cases: one line each, short, without the per-output checks.
passing=$(grep -c '^\[ *[0-9]*/[0-9]*\] PASSED ' "$WORK/pipe.txt")
check "passing cases print verdict lines ($passing)" test "$passing" -gt 100
check "every passing line is under 120 characters" \
  test "$(grep '^\[ *[0-9]*/[0-9]*\] PASSED ' "$WORK/pipe.txt" | awk 'length >= 120' | wc -l)" -eq 0
check "passing lines leave the checks to -v" test "$(grep -c 'ulp<=' "$WORK/pipe.txt")" -eq 0

# The end list: every failed id of results.jsonl, after the header, each with a repro line.
n_failed=$(grep -c '"verdict":"FAILED"' "$WORK/red/results.jsonl")
check "the end list header counts the $n_failed failures" grep -qx "failed cases ($n_failed):" "$WORK/pipe.txt"
sed -n '/^failed cases (/,$p' "$WORK/pipe.txt" >"$WORK/end.txt"
missing=0
for id in $(python3 -c "
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r['verdict'] == 'FAILED': print(r['id'])" "$WORK/red/results.jsonl"); do
  grep -q "^  FAILED *$id: " "$WORK/end.txt" || { echo "not in the end list: $id"; missing=$((missing + 1)); }
done
check "the end list names every failed id" test "$missing" -eq 0
check "the end list gives each failure a repro" \
  test "$(grep -c "^      repro: .*opgate repro .* --backend $DEFECT" "$WORK/end.txt")" -eq "$n_failed"
n_passed=$(grep -c '"verdict":"PASSED"' "$WORK/red/results.jsonl")
check "the totals line counts failures and passes with the wall time" \
  grep -qE "^$n_failed failed, $n_passed passed in [0-9]+\.[0-9] s$" "$WORK/pipe.txt"
check "a pipe gets no escape codes" test "$(grep -c "$esc" "$WORK/pipe.txt")" -eq 0

# Colour: a terminal only, and never with NO_COLOR or CI set; --color overrides both ways.
one_op=(run --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci --backend "$DEFECT" --overwrite)
tty() { script -qec "$*" /dev/null </dev/null; }
tty env -u NO_COLOR -u CI "$OPGATE" "${one_op[@]}" --out "$WORK/t" >"$WORK/tty.txt" 2>&1
check "a terminal gets red FAILED lines" grep -qF "${red}FAILED" "$WORK/tty.txt"
tty env -u CI NO_COLOR=1 "$OPGATE" "${one_op[@]}" --out "$WORK/t" >"$WORK/nocolor.txt" 2>&1
check "NO_COLOR=1: a terminal without colour" test "$(grep -c "$esc" "$WORK/nocolor.txt")" -eq 0
check "NO_COLOR=1: still the failures" grep -q "FAILED" "$WORK/nocolor.txt"
tty env -u NO_COLOR CI=true "$OPGATE" "${one_op[@]}" --out "$WORK/t" >"$WORK/ci.txt" 2>&1
check "CI set: a terminal without colour" test "$(grep -c "$esc" "$WORK/ci.txt")" -eq 0
tty env -u NO_COLOR -u CI "$OPGATE" "${one_op[@]}" --color never --out "$WORK/t" >"$WORK/never.txt" 2>&1
check "--color never: no colour on a terminal" test "$(grep -cF "$red" "$WORK/never.txt")" -eq 0
env NO_COLOR=1 "$OPGATE" "${one_op[@]}" --color always --out "$WORK/t" >"$WORK/always.txt" 2>&1
check "--color always: colour in a pipe" grep -qF "${red}FAILED" "$WORK/always.txt"

# -v: passing lines name each output's check.
"$OPGATE" run --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci -v --out "$WORK/v" >"$WORK/v.txt" 2>&1
check "-v: passing lines name each output's check" grep -q '^\[ *[0-9]*/[0-9]*\] PASSED .* ulp<=' "$WORK/v.txt"
expect_error 2 "--color" run --root "$SRC" --color sometimes --out "$WORK/x"
echo "console: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
