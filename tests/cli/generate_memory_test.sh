#!/usr/bin/env bash
# Generated cases are streamed, never held all at once (issue 23): `gen --count N` writes each case
# as it is made, and `run --generate N` keeps only the cases its selection keeps. Checked under a
# 300 MB address-space limit (ulimit -v) with 200,000 cases of one operator, which held at once
# took about 670 MB (gen) and 470 MB (run --generate with a filter matching nothing; before the
# one-line refusal). Both run here in a few seconds.
# Usage: generate_memory_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
limited() { (ulimit -v 300000 && "$OPGATE" "$@"); }

limited gen --op moe_ffn --count 200000 --out "$WORK/many.json" >"$WORK/gen.txt" 2>&1
rc=$?
check "gen --count 200000 under 300 MB: exit 0 (got $rc): $(tail -1 "$WORK/gen.txt")" test "$rc" -eq 0
check "gen --count 200000: 200000 cases in the file" \
  test "$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$WORK/many.json" 2>&1)" = 200000
"$OPGATE" gen --op moe_ffn --count 3 --seed 5 >"$WORK/three.json" 2>&1
check "gen to stdout: --count 3 and --count 5 begin with the same 3 cases" \
  python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["cases"]; b = json.load(open(sys.argv[2]))["cases"]; sys.exit(a != b[:3])' \
  "$WORK/three.json" <("$OPGATE" gen --op moe_ffn --count 5 --seed 5)

limited run --op moe_ffn --generate 200000 --filter '^nomatch$' --out "$WORK/nomatch" >"$WORK/run.txt" 2>"$WORK/run_err.txt"
rc=$?
check "run --generate 200000 matching nothing under 300 MB: exit 2 (got $rc)" test "$rc" -eq 2
check "run --generate: the refusal is one line naming the filter: $(cat "$WORK/run_err.txt")" \
  test "$(wc -l <"$WORK/run_err.txt")" -eq 1 -a -n "$(grep -F "^nomatch$" "$WORK/run_err.txt")"

echo "generate memory: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
