#!/usr/bin/env bash
# End-to-end tests of report folders as later commands read them: resuming after a crash cut the
# last line short, refusing to resume with another configuration, the case count a resume stores,
# corrupt results.jsonl files, and `merge` checking every input (overlap, --out inside an input,
# missing shards, another backend or --repeat) before writing.
# Usage: reports_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
# Every line of a results.jsonl is one JSON object ending in a newline.
all_lines_json() {
  python3 -c "
import json, sys
text = open(sys.argv[1]).read()
assert text.endswith('\n'), 'no final newline'
[json.loads(l) for l in text.splitlines()]" "$1"
}
SMOKE="$SRC/cases/moe_finalize_routing_v2_grad/smoke.json"
FAULT=fault:mfrg.k_major_index
# Two cases: the first passes under $FAULT, the second fails.
python3 - "$SMOKE" "$WORK/two.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
keep = ["mfrg.copy_no_scales.f32.001", "mfrg.scales_dropless.f16.001"]
d["cases"] = [c for c in d["cases"] if c["id"] in keep]
json.dump(d, open(sys.argv[2], "w"))
P

# --- a crash cut the last (FAILED) line short: resume runs that case again ---
"$OPGATE" run --cases "$WORK/two.json" --backend "$FAULT" --out "$WORK/r_cut" -q >/dev/null 2>&1
check "the two-case fault run fails" test $? -eq 1
check "run.json records the run" grep -q '"repeat": 1' "$WORK/r_cut/run.json"
check "the failing case is the last line" test "$(tail -n 1 "$WORK/r_cut/results.jsonl" | grep -c '"FAILED"')" -eq 1
python3 - "$WORK/r_cut/results.jsonl" <<'P'
import sys
p = sys.argv[1]; b = open(p, "rb").read()
last = b.rstrip(b"\n").rfind(b"\n") + 1
open(p, "wb").write(b[:last + (len(b) - last) // 2])  # half the last line, no newline
P
"$OPGATE" run --cases "$WORK/two.json" --backend "$FAULT" --out "$WORK/r_cut" --resume >"$WORK/cut.txt" 2>&1
check "resume after a cut line still fails the gate" test $? -eq 1
check "resume runs the cut case again" test "$(grep -c '^\[' "$WORK/cut.txt")" -eq 1
check "the resumed summary counts the failure" grep -q "^cases:2 passed:1 failed:1 " "$WORK/r_cut/summary.txt"
check "the resumed results.jsonl is two whole lines" all_lines_json "$WORK/r_cut/results.jsonl"
check "the resumed results.jsonl has no third line" test "$(wc -l <"$WORK/r_cut/results.jsonl")" -eq 2

# --- resume refuses another configuration and leaves the folder alone ---
"$OPGATE" run --cases "$WORK/two.json" --out "$WORK/r_emu" -q >/dev/null 2>&1
check "the emu run passes" test $? -eq 0
head -n 1 "$WORK/r_emu/results.jsonl" >"$WORK/one_line"; cp "$WORK/one_line" "$WORK/r_emu/results.jsonl"
expect_error 2 "r_emu/run.json: cannot resume: backend was \"emu\", this run has \"$FAULT\"" \
  run --cases "$WORK/two.json" --out "$WORK/r_emu" --resume --backend "$FAULT" --repeat 3
expect_error 2 "r_emu/run.json: cannot resume: repeat was 1, this run has 3" \
  run --cases "$WORK/two.json" --out "$WORK/r_emu" --resume --repeat 3
expect_error 2 "r_emu/run.json: cannot resume: shard was unset, this run has \"0/2\"" \
  run --cases "$WORK/two.json" --out "$WORK/r_emu" --resume --shard 0/2
expect_error 2 "r_emu/run.json: cannot resume: selection was .*this run has .*NOMATCH" \
  run --cases "$WORK/two.json" --out "$WORK/r_emu" --resume --filter 'copy|NOMATCH'
check "a refused resume leaves results.jsonl alone" cmp -s "$WORK/one_line" "$WORK/r_emu/results.jsonl"
(cd "$WORK" && "$OPGATE" run --cases two.json --out r_emu --resume -q >/dev/null 2>&1)
check "the same configuration resumes (case file named relative to another directory)" test $? -eq 0
check "the resumed emu run is complete" grep -q "^cases:2 passed:2 " "$WORK/r_emu/summary.txt"

# --- resume stores the case count of the run that finishes the folder ---
# The case file gains a case between attempts: the folder is finished only when that one ran too.
"$OPGATE" run --cases "$WORK/two.json" --out "$WORK/r_grow" -q >/dev/null 2>&1
cp "$WORK/two.json" "$WORK/two_saved.json"
python3 - "$SMOKE" "$WORK/two.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
keep = ["mfrg.copy_no_scales.f32.001", "mfrg.scales_dropless.f16.001", "mfrg.bias_scales_dropless.bf16.001"]
d["cases"] = [c for c in d["cases"] if c["id"] in keep]
assert len(d["cases"]) == 3, [c["id"] for c in d["cases"]]
json.dump(d, open(sys.argv[2], "w"))
P
"$OPGATE" run --cases "$WORK/two.json" --out "$WORK/r_grow" --resume -q >/dev/null 2>&1
check "the grown case file resumes" test $? -eq 0
check "resume stores the new case count in run.json" \
  python3 -c "import json, sys; assert json.load(open(sys.argv[1]))['cases'] == 3" "$WORK/r_grow/run.json"
cp "$WORK/two_saved.json" "$WORK/two.json"

# --- a corrupt results.jsonl is an error everywhere it is read ---
mkdir -p "$WORK/r_bad"
{ head -n 1 "$WORK/r_emu/results.jsonl"; echo "not json"; tail -n 1 "$WORK/r_emu/results.jsonl"; } >"$WORK/r_bad/results.jsonl"
cp "$WORK/r_bad/results.jsonl" "$WORK/bad_copy"
expect_error 2 "r_bad/results.jsonl: line 2: malformed JSON" merge "$WORK/r_bad" "$WORK/r_cut" --out "$WORK/m_bad"
check "no merged folder from a corrupt input" test ! -e "$WORK/m_bad"
expect_error 2 "r_bad/results.jsonl: line 2: malformed JSON" baseline accept "$WORK/r_bad" --to "$WORK/base_bad"
check "no baseline from a corrupt report" test ! -e "$WORK/base_bad/results.jsonl"
expect_error 2 "r_bad/results.jsonl: line 2: malformed JSON" baseline diff "$WORK/r_emu" "$WORK/r_bad"
expect_error 2 "r_bad/results.jsonl: line 2: malformed JSON" run --cases "$WORK/two.json" --out "$WORK/r_bad" --resume
check "a refused resume leaves a corrupt file as it was" cmp -s "$WORK/bad_copy" "$WORK/r_bad/results.jsonl"

# --- merge: every input is checked before anything is written ---
for i in 0 1 2 3; do
  "$OPGATE" run --cases "$SMOKE" --shard $i/4 --out "$WORK/s4_$i" -q >/dev/null 2>&1
  check "shard $i/4 passes" test $? -eq 0
done
"$OPGATE" run --cases "$SMOKE" --shard 0/2 --out "$WORK/s2_0" -q >/dev/null 2>&1
"$OPGATE" run --cases "$SMOKE" --shard 1/2 --out "$WORK/s2_1" -q >/dev/null 2>&1
expect_error 2 "overlapping shards" merge "$WORK/s2_0" "$WORK/s2_0" --out "$WORK/m_overlap"
check "nothing written on overlapping shards" test ! -e "$WORK/m_overlap"
expect_error 2 "nowhere/results.jsonl: missing" merge "$WORK/s2_0" "$WORK/nowhere" --out "$WORK/m_missing"
check "nothing written on a missing input" test ! -e "$WORK/m_missing"
cp "$WORK/s2_0/results.jsonl" "$WORK/s2_0_copy"
expect_error 2 "s2_0: --out is the input report .*s2_0 or inside it" merge "$WORK/s2_0" "$WORK/s2_1" --out "$WORK/s2_0"
expect_error 2 "--out is the input report" merge "$WORK/s2_0" "$WORK/s2_1" --out "$WORK/s2_1/"
expect_error 2 "--out is the input report" merge "$WORK/s2_0" "$WORK/s2_1" --out "$WORK/s2_0/../s2_0/merged"
check "a refused merge leaves the input shard alone" cmp -s "$WORK/s2_0_copy" "$WORK/s2_0/results.jsonl"
check "a refused merge writes nothing inside an input" test ! -e "$WORK/s2_0/merged"
expect_error 2 "merge: shards 1/4, 3/4 missing \(the inputs hold 0/4, 2/4\)" \
  merge "$WORK/s4_0" "$WORK/s4_2" --out "$WORK/m_partial"
check "nothing written for a partial shard set" test ! -e "$WORK/m_partial"
expect_error 2 "s4_1/run.json: shard 1/4 is from another split" merge "$WORK/s2_0" "$WORK/s4_1" --out "$WORK/m_mixed"
"$OPGATE" merge "$WORK/s4_3" "$WORK/s4_1" "$WORK/s4_0" "$WORK/s4_2" --out "$WORK/m_all" >/dev/null 2>&1
check "merging all four shards exits 0" test $? -eq 0
check "the merged report counts every case" grep -q "^cases:6 passed:6 " "$WORK/m_all/summary.txt"
check "the merged run.json keeps the shared configuration and counts every case" python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))
assert m['backend']['backend'] == 'emu' and m['repeat'] == 1 and m['against'] == 'reference', m
assert m['cases'] == 6 and len(m['merged_from']) == 4 and 'shard' not in m, m" "$WORK/m_all/run.json"
# Shards of different selections are two halves of different runs (issue 23: shard 0/2 of one
# file and 1/2 of another merged as a complete split).
"$OPGATE" run --cases "$WORK/two.json" --shard 1/2 --out "$WORK/s2_1_two" -q >/dev/null 2>&1
expect_error 2 "s2_1_two/run.json: selection.files is .*two.json.*, but .*s2_0/run.json has .*smoke.json.*: merge only the shards of one selection" \
  merge "$WORK/s2_0" "$WORK/s2_1_two" --out "$WORK/m_selections"
check "nothing written for shards of different selections" test ! -e "$WORK/m_selections"
# Unsharded runs (other machines) merge as before; a merged report holds no shard of its own.
"$OPGATE" run --cases "$WORK/two.json" --out "$WORK/r_emu2" -q >/dev/null 2>&1
expect_error 2 "r_emu2: case 'mfrg.copy_no_scales.f32.001' also appears" merge "$WORK/r_emu" "$WORK/r_emu2" --out "$WORK/m_unsharded"
"$OPGATE" run --cases "$SMOKE" --filter adversarial --out "$WORK/r_other" -q >/dev/null 2>&1
"$OPGATE" merge "$WORK/r_emu" "$WORK/r_other" --out "$WORK/m_unsharded" >/dev/null 2>&1
check "unsharded inputs merge" test $? -eq 0
check "the unsharded merge counts both reports" grep -q "^cases:3 passed:3 " "$WORK/m_unsharded/summary.txt"
# Results of another backend, --repeat or --against do not add up to one gate decision.
expect_error 2 "r_cut/run.json: backend is \"$FAULT\", but .*r_other/run.json has \"emu\": merge only reports of one backend" \
  merge "$WORK/r_other" "$WORK/r_cut" --out "$WORK/m_backends"
check "nothing written for mixed backends" test ! -e "$WORK/m_backends"
"$OPGATE" run --cases "$WORK/two.json" --repeat 2 --out "$WORK/r_rep2" -q >/dev/null 2>&1
expect_error 2 "r_rep2/run.json: repeat is 2, but .*r_other/run.json has 1" \
  merge "$WORK/r_other" "$WORK/r_rep2" --out "$WORK/m_repeats"
check "nothing written for mixed --repeat" test ! -e "$WORK/m_repeats"
# A shard killed and never resumed (its last result lost) is refused, not merged short.
rm -rf "$WORK/s4_1_killed"; cp -r "$WORK/s4_1" "$WORK/s4_1_killed"
head -n -1 "$WORK/s4_1/results.jsonl" >"$WORK/s4_1_killed/results.jsonl"
expect_error 2 "s4_1_killed: unfinished run: [0-9]+ of [0-9]+ cases have results" \
  merge "$WORK/s4_0" "$WORK/s4_1_killed" "$WORK/s4_2" "$WORK/s4_3" --out "$WORK/m_killed"
check "no merged folder from an unfinished shard" test ! -e "$WORK/m_killed"

echo "reports tests: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
