#!/usr/bin/env bash
# End-to-end tests of the opgate command line: exit codes, one-line errors for bad input, the
# report files, resume, sharding, determinism, fault detection with domain-term localisation,
# repro, and the golden regenerate/verify cycle with its diagnoses.
# Usage: cli_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
SMOKE="$SRC/cases/moe_finalize_routing_v2_grad/smoke.json"
OP=moe_finalize_routing_v2_grad

# --- bad input: exit 2, one line naming file / case / field, nothing written ---
printf '{"op": "moe_finalize_routing_v2_grad", "cases": [ {"id": "x",' >"$WORK/malformed.json"
expect_error 2 "malformed.json: malformed JSON" run --cases "$WORK/malformed.json" --out "$WORK/r_bad1"
check "no report folder after malformed JSON" test ! -e "$WORK/r_bad1"
cat >"$WORK/unknown_key.json" <<'J'
{"op": "moe_finalize_routing_v2_grad", "cases": [{"id": "mfrg.k.f32", "params": {"R": 2}, "sead": 3}]}
J
expect_error 2 "unknown_key.json: cases\[0\]: case 'mfrg.k.f32': unknown key 'sead'" run --cases "$WORK/unknown_key.json"
cat >"$WORK/unknown_param.json" <<'J'
{"op": "moe_finalize_routing_v2_grad", "cases": [{"id": "mfrg.p.f32", "params": {"R": 2, "hidden": 8}}]}
J
expect_error 2 "case 'mfrg.p.f32'.*field 'params.hidden': unknown key" run --cases "$WORK/unknown_param.json"
cat >"$WORK/bad_shape.json" <<'J'
{"op": "moe_finalize_routing_v2_grad", "cases": [{"id": "mfrg.s.f32", "params": {"R": 2}, "tensors": {"gradY": {"shape": [2, -8]}}}]}
J
expect_error 2 "case 'mfrg.s.f32'.*field 'tensors.gradY.shape'" run --cases "$WORK/bad_shape.json"
cat >"$WORK/bad_range.json" <<'J'
{"op": "moe_finalize_routing_v2_grad", "cases": [{"id": "mfrg.r.f32", "params": {"H": -1}}]}
J
expect_error 2 "case 'mfrg.r.f32'.*field 'params.H': -1 is outside" run --cases "$WORK/bad_range.json"
cat >"$WORK/bad_op.json" <<'J'
{"op": "moe_ffn_v9", "cases": []}
J
expect_error 2 "bad_op.json: field 'op': unknown operator 'moe_ffn_v9'" run --cases "$WORK/bad_op.json"
expect_error 2 "--op 'nope': unknown operator" run --op nope
expect_error 2 "unknown backend 'gpu'" run --cases "$SMOKE" --backend gpu
expect_error 2 "unknown defect" run --cases "$SMOKE" --backend fault:mfrg.nope
expect_error 2 "ascend backend unavailable" run --cases "$SMOKE" --backend ascend
expect_error 2 "no such case file" run --op "$OP" --tier weekly
expect_error 2 "shard" run --cases "$SMOKE" --shard 3/2

# --- a clean run writes the three reports and exits 0 ---
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_ok" >"$WORK/run.txt" 2>&1
check "smoke run exits 0" test $? -eq 0
for f in summary.txt results.jsonl junit.xml report.html; do check "report has $f" test -s "$WORK/r_ok/$f"; done
n_cases=$(grep -c '"id"' "$SMOKE")
check "results.jsonl has one line per case" test "$(wc -l <"$WORK/r_ok/results.jsonl")" -eq "$n_cases"
check "summary ends with the counter line" grep -q "^cases:$n_cases passed:$n_cases failed:0" "$WORK/r_ok/summary.txt"
check "junit.xml is well-formed with every case" python3 -c "
import sys, xml.etree.ElementTree as ET
root = ET.parse('$WORK/r_ok/junit.xml').getroot()
sys.exit(0 if len(root.findall('.//testcase')) == $n_cases else 1)"

# --- resume: only the missing case runs again ---
head -n $((n_cases - 1)) "$WORK/r_ok/results.jsonl" >"$WORK/partial"; mv "$WORK/partial" "$WORK/r_ok/results.jsonl"
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_ok" --resume >"$WORK/resume.txt" 2>&1
check "resume exits 0" test $? -eq 0
check "resume runs exactly one case" test "$(grep -c '^\[' "$WORK/resume.txt")" -eq 1
check "resumed results are complete" test "$(wc -l <"$WORK/r_ok/results.jsonl")" -eq "$n_cases"

# --- baselines: accept a report, then judge runs against it ---
"$OPGATE" baseline accept "$WORK/r_ok" --to "$WORK/base" >/dev/null 2>&1
check "baseline accept writes results and manifest" test -s "$WORK/base/results.jsonl" -a -s "$WORK/base/baseline.json"
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_bl_same" --baseline "$WORK/base" >"$WORK/bl_same.txt" 2>&1
check "an unchanged run passes against its baseline" test $? -eq 0
check "baseline.txt counts every case unchanged" grep -q "new_failure:0 missing:0 drift:0 .* unchanged:$n_cases" "$WORK/r_bl_same/baseline.txt"
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_bl_fault" --baseline "$WORK/base" -q \
  --backend fault:mfrg.k_major_index >"$WORK/bl_fault.txt" 2>&1
check "a defect fails the run against the baseline" test $? -eq 1
check "the defect's failures are NEW_FAILURE lines" grep -q "^  NEW_FAILURE .*PASSED -> FAILED" "$WORK/bl_fault.txt"
"$OPGATE" baseline accept "$WORK/r_bl_fault" --to "$WORK/base_fault" >/dev/null 2>&1
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_bl_known" --baseline "$WORK/base_fault" --allow-known-failures -q \
  --backend fault:mfrg.k_major_index >"$WORK/bl_known.txt" 2>&1
check "known failures pass with --allow-known-failures" test $? -eq 0
check "known failures are listed as STILL_FAILING" grep -q "^  STILL_FAILING" "$WORK/bl_known.txt"
"$OPGATE" baseline diff "$WORK/base_fault" "$WORK/r_bl_same" >"$WORK/bl_fixed.txt" 2>&1
check "baseline diff on a finished report reports FIXED" grep -q "^  FIXED" "$WORK/bl_fixed.txt"
# A case in the baseline that the case files no longer hold is MISSING, unless the run never meant
# to run it (another shard).
python3 - "$WORK/base/results.jsonl" "$WORK/base_ghost/results.jsonl" <<'P'
import json, os, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ghost = dict(lines[0]); ghost["id"] = "mfrg.ghost.f16.001"
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
open(sys.argv[2], "w").write("".join(json.dumps(l) + "\n" for l in lines + [ghost]))
P
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_bl_ghost" -q --baseline "$WORK/base_ghost" >"$WORK/bl_ghost.txt" 2>&1
check "a vanished case fails the run" test $? -eq 1
check "the vanished case is MISSING" grep -q "^  MISSING .*mfrg.ghost.f16.001" "$WORK/bl_ghost.txt"
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_bl_filter" -q --baseline "$WORK/base_ghost" --filter 'dropless' >"$WORK/bl_filter.txt" 2>&1
check "cases outside --filter are not missing" test $? -eq 0
# Drift: the baseline claims the outputs used a tenth of the tolerance they use now.
python3 - "$WORK/base/results.jsonl" "$WORK/base_drift/results.jsonl" <<'P'
import json, os, sys
out = []
for l in open(sys.argv[1]):
    r = json.loads(l)
    for o in r["outputs"]:
        o["metrics"]["budget_used"] = o["metrics"].get("budget_used", 0) / 10
    out.append(json.dumps(r))
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
open(sys.argv[2], "w").write("\n".join(out) + "\n")
P
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_bl_drift" -q --baseline "$WORK/base_drift" --drift-floor 0 >"$WORK/bl_drift.txt" 2>&1
check "drift alone does not fail the gate" test $? -eq 0
check "drift is reported per output" grep -q "^  DRIFT .*tolerance used" "$WORK/bl_drift.txt"
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_bl_drift2" -q --baseline "$WORK/base_drift" --drift-floor 0 --fail-on-drift >/dev/null 2>&1
check "--fail-on-drift fails the gate on drift" test $? -eq 1
expect_error 2 "nowhere: no such baseline" run --cases "$SMOKE" --out "$WORK/r_bl_bad" --baseline "$WORK/nowhere"
check "no report folder when the baseline is unreadable" test ! -e "$WORK/r_bl_bad"
# A baseline of every operator's smoke cases; a run of one operator's file misses none of the others.
"$OPGATE" run --tier smoke --out "$WORK/r_all_smoke" -q >/dev/null 2>&1
"$OPGATE" baseline accept "$WORK/r_all_smoke" --to "$WORK/base_all" >/dev/null 2>&1
"$OPGATE" run --cases "$SMOKE" --out "$WORK/r_bl_one_op" -q --baseline "$WORK/base_all" >"$WORK/bl_one_op.txt" 2>&1
check "one operator's file against a multi-operator baseline passes" test $? -eq 0
check "other operators' cases are out of scope, not missing" grep -q "new_failure:0 missing:0 " "$WORK/r_bl_one_op/baseline.txt"
expect_error 2 "--out is the baseline folder" run --cases "$SMOKE" --out "$WORK/base_all" --baseline "$WORK/base_all"
expect_error 2 "--out is the baseline folder" run --cases "$SMOKE" --out "$WORK/base_all/" --baseline "$WORK/base_all/results.jsonl"
check "a refused run leaves the baseline alone" grep -q '"accepted_from"' "$WORK/base_all/baseline.json"
mkdir -p "$WORK/base_empty_src"; : >"$WORK/base_empty_src/results.jsonl"
expect_error 2 "no results: refusing an empty baseline" baseline accept "$WORK/base_empty_src" --to "$WORK/base_x"

# --- sharding: the shards partition the cases ---
"$OPGATE" list --cases "$SMOKE" --shard 0/2 | grep '^mfrg' | awk '{print $1}' >"$WORK/s0" 2>/dev/null
"$OPGATE" run --cases "$SMOKE" --shard 0/2 --out "$WORK/r_s0" -q >/dev/null 2>&1
"$OPGATE" run --cases "$SMOKE" --shard 1/2 --out "$WORK/r_s1" -q >/dev/null 2>&1
cat "$WORK/r_s0/results.jsonl" "$WORK/r_s1/results.jsonl" | python3 -c "import sys,json; print('\n'.join(sorted(json.loads(l)['id'] for l in sys.stdin)))" >"$WORK/union"
python3 -c "import json; print('\n'.join(sorted(c['id'] for c in json.load(open('$SMOKE'))['cases'])))" >"$WORK/all"
check "shards 0/2 and 1/2 partition the smoke tier" diff -q "$WORK/union" "$WORK/all"

"$OPGATE" merge "$WORK/r_s0" "$WORK/r_s1" --out "$WORK/r_merged" >/dev/null 2>&1
check "merge of the shards exits 0" test $? -eq 0
check "merged report counts every case" grep -q "^cases:$n_cases passed:$n_cases" "$WORK/r_merged/summary.txt"
expect_error 2 "overlapping shards" merge "$WORK/r_s0" "$WORK/r_s0" --out "$WORK/r_merged2"

# --- determinism check is reported ---
"$OPGATE" run --cases "$SMOKE" --repeat 3 --out "$WORK/r_rep" -q >/dev/null 2>&1
check "--repeat 3 passes" test $? -eq 0
check "--repeat 3 reports bit-identical outputs" grep -q "bit-identical over 3 runs" "$WORK/r_rep/results.jsonl"

# --- a defect is caught, localised in domain terms, and reproduces ---
"$OPGATE" run --cases "$SMOKE" --filter scales_dropless --backend fault:mfrg.k_major_index --out "$WORK/r_fault" >"$WORK/fault.txt" 2>&1
check "fault run exits 1" test $? -eq 1
check "failure names worst elements by (row, k, column)" grep -qE "expandedX row [0-9]+ = \(r [0-9]+, k [0-9]+\), col [0-9]+" "$WORK/fault.txt"
check "failure prints a repro line" grep -q "repro: .*opgate repro .* --backend fault:mfrg.k_major_index" "$WORK/fault.txt"
check "failed/<id>.json written" test -s "$WORK/r_fault/failed/mfrg.scales_dropless.f16.001.json"
"$OPGATE" repro "$WORK/r_fault/failed/mfrg.scales_dropless.f16.001.json" --backend fault:mfrg.k_major_index >"$WORK/repro.txt" 2>&1
check "repro of failed/<id>.json fails again" test $? -eq 1
"$OPGATE" repro "$WORK/r_fault/failed/mfrg.scales_dropless.f16.001.json" --backend emu >/dev/null 2>&1
check "the same case passes on emu" test $? -eq 0

# --- golden: regenerate, verify, diagnose ---
"$OPGATE" golden regen --cases "$SMOKE" --out "$WORK/golden" >/dev/null 2>&1
check "golden regen exits 0" test $? -eq 0
"$OPGATE" golden verify --out "$WORK/golden" >/dev/null 2>&1
check "fresh golden verifies" test $? -eq 0
"$OPGATE" run --cases "$SMOKE" --against golden --golden-root "$WORK/golden" --out "$WORK/r_gold" -q >/dev/null 2>&1
check "run --against golden passes" test $? -eq 0
G="$WORK/golden/$OP/mfrg.scales_dropless.f16.001"
check "golden case has the contract's files" test -s "$G/case.json" -a -s "$G/manifest.json" -a -s "$G/inputs/gradY.npy" -a -s "$G/expected/gradScalesOut.npy"
check "expected floats are stored as float64" python3 -c "
import json; m = json.load(open('$G/manifest.json'))
t = m['tensors']['expected/gradScalesOut.npy']; assert t['dtype'] == 'float16' and t['stored_as'] == 'float64', t"
cp -r "$WORK/golden" "$WORK/golden_bad"
head -c 100 "$G/inputs/gradY.npy" >"$WORK/golden_bad/$OP/mfrg.scales_dropless.f16.001/inputs/gradY.npy"
"$OPGATE" golden verify --out "$WORK/golden_bad" >"$WORK/verify.txt" 2>&1
check "verify flags a truncated file" test $? -eq 1
check "verify says 'file corrupted'" grep -q "mfrg.scales_dropless.f16.001: file corrupted" "$WORK/verify.txt"
expect_error 2 "gradY.npy" run --cases "$SMOKE" --filter scales_dropless --against golden --golden-root "$WORK/golden_bad"
rm -rf "$WORK/golden_bad"; cp -r "$WORK/golden" "$WORK/golden_bad"
python3 - "$WORK/golden_bad/$OP/mfrg.scales_dropless.f16.001/case.json" <<'P'
import json, sys
p = sys.argv[1]; c = json.load(open(p)); c["seed"] += 1; json.dump(c, open(p, "w"))
P
"$OPGATE" golden verify --out "$WORK/golden_bad" >"$WORK/verify.txt" 2>&1
check "verify says 'input generator changed' when inputs differ" grep -q "input generator changed" "$WORK/verify.txt"
check "no temporary folders left by regen" test -z "$(find "$WORK/golden" -name '.*tmp*')"

# --- golden diff: a reviewable change, from a folder or from a git revision ---
rm -rf "$WORK/golden_new"; cp -r "$WORK/golden" "$WORK/golden_new"
"$OPGATE" golden diff "$WORK/golden" --out "$WORK/golden_new" >"$WORK/gdiff_same.txt" 2>&1
check "golden diff of identical trees exits 0" test $? -eq 0
check "golden diff counts identical cases" grep -q "0 changed, 0 added, 0 removed, 0 unreadable" "$WORK/gdiff_same.txt"
# Nudge the last expected gradScalesOut value by 2^-30 relative (invisible in float16), and record
# its digest as a regen would (a file that disagrees with its manifest is corruption, not a change).
python3 - "$WORK/golden_new/$OP/mfrg.scales_dropless.f16.001" <<'P'
import hashlib, json, struct, sys
d = sys.argv[1]; f = d + "/expected/gradScalesOut.npy"
b = bytearray(open(f, "rb").read())
v = struct.unpack_from("<d", b, len(b) - 8)[0]
struct.pack_into("<d", b, len(b) - 8, v * (1 + 2**-30) if v != 0 else 2**-40)
open(f, "wb").write(bytes(b))
m = json.load(open(d + "/manifest.json"))
m["tensors"]["expected/gradScalesOut.npy"]["sha256"] = hashlib.sha256(bytes(b)).hexdigest()
json.dump(m, open(d + "/manifest.json", "w"), indent=2)
P
rm -rf "$WORK/golden_new/$OP/mfrg.copy_no_scales.f32.001"
"$OPGATE" golden diff "$WORK/golden" --out "$WORK/golden_new" >"$WORK/gdiff.txt" 2>&1
check "golden diff of changed trees exits 1" test $? -eq 1
check "golden diff names the changed output" grep -q "expected/gradScalesOut.npy: 1 of 12 elements changed, .* 0 round to a different float16" "$WORK/gdiff.txt"
check "golden diff names the removed case" grep -q "^REMOVED .*mfrg.copy_no_scales.f32.001" "$WORK/gdiff.txt"
GIT_REPO="$WORK/golden_git"; rm -rf "$GIT_REPO"; mkdir -p "$GIT_REPO"; cp -r "$WORK/golden" "$GIT_REPO/golden"
(cd "$GIT_REPO" && git init -q && git add golden && git -c user.name=t -c user.email=t@t commit -qm golden) >/dev/null 2>&1
rm -rf "$GIT_REPO/golden"; cp -r "$WORK/golden_new" "$GIT_REPO/golden"
"$OPGATE" golden diff --rev HEAD --root "$GIT_REPO" >"$WORK/gdiff_rev.txt" 2>&1
check "golden diff --rev compares with the committed tree" grep -q "^golden diff HEAD -> .*1 changed, 0 added, 1 removed" "$WORK/gdiff_rev.txt"
check "golden diff --rev leaves no scratch folder" test -z "$(find /tmp -maxdepth 1 -name 'opgate_golden_*' -newer "$WORK/gdiff.txt")"
expect_error 2 "cannot extract golden/ of revision 'no_such_rev'" golden diff --rev no_such_rev --root "$GIT_REPO"
expect_error 2 "nowhere: no such golden folder" golden diff "$WORK/nowhere" --out "$WORK/golden"

# --- generated cases: reproducible files, runs, shrinking a fault to a minimal repro ---
"$OPGATE" gen --op "$OP" --count 40 --seed 11 --out "$WORK/gen1.json" && "$OPGATE" gen --op mfrg --count 40 --seed 11 --out "$WORK/gen2.json"
check "gen is reproducible byte for byte" cmp -s "$WORK/gen1.json" "$WORK/gen2.json"
"$OPGATE" gen --op "$OP" --count 40 --seed 12 --out "$WORK/gen3.json"
check "another seed gives other cases" test -n "$(cmp "$WORK/gen1.json" "$WORK/gen3.json" 2>&1)"
"$OPGATE" run --cases "$WORK/gen1.json" --out "$WORK/r_gen_file" -q >/dev/null 2>&1
check "a generated case file runs and passes" test $? -eq 0
"$OPGATE" run --generate 200 --seed 5 --out "$WORK/r_gen" -q >"$WORK/gen_run.txt" 2>&1
check "run --generate 200 passes on emu" test $? -eq 0
check "run --generate ran 200 cases per operator" grep -q "^cases:$((200 * $("$OPGATE" list --ops | wc -l))) " "$WORK/r_gen/summary.txt"
cat >"$WORK/big.json" <<'J'
{"op": "moe_finalize_routing_v2_grad", "cases": [{"id": "mfrg.big.bf16", "params": {"dtype": "bfloat16", "R": 64, "K": 8, "H": 1029, "scales": true, "bias": true, "dropPadMode": 1, "expertNum": 16, "expertCapacity": 40, "skew": 0.3}, "seed": 3, "fill": "realistic"}]}
J
# A relative --out: the repro line still names the file (and the binary) by absolute path.
(cd "$WORK" && "$OPGATE" shrink big.json --backend fault:mfrg.last_block_dropped --out min.json >shrink.txt 2>&1)
check "shrink exits 0" test $? -eq 0
check "shrunk case is at most a few elements wide" python3 -c "
import json; p = json.load(open('$WORK/min.json'))['cases'][0]['params']
assert p['R'] * p['K'] * p['H'] <= 8, p"
check "shrink prints an absolute repro command" grep -qx "repro: $OPGATE repro $WORK/min.json --backend fault:mfrg.last_block_dropped" "$WORK/shrink.txt"
"$OPGATE" repro "$WORK/min.json" --backend fault:mfrg.last_block_dropped >/dev/null 2>&1
check "the shrunk case reproduces the failure" test $? -eq 1
"$OPGATE" repro "$WORK/min.json" --backend emu >/dev/null 2>&1
check "the shrunk case passes without the defect" test $? -eq 0
expect_error 2 "does not fail on emu" shrink "$WORK/big.json" --backend emu

# --- --version: the commit, then the architecture and the vector paths this binary runs here ---
"$OPGATE" --version >"$WORK/version.txt" 2>&1
check "--version names the harness version" grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+\+g' "$WORK/version.txt"
check "--version names the architecture and its paths, scalar first" \
  grep -Eq '^(x86_64|aarch64): vector paths scalar( [a-z0-9]+)+ \(references use [a-z0-9]+' "$WORK/version.txt"
check "--version: the baseline vector path of the architecture is listed" \
  grep -Eq '^(x86_64: vector paths scalar sse2|aarch64: vector paths scalar neon)' "$WORK/version.txt"
OPGATE_ISA=scalar "$OPGATE" --version >"$WORK/version_scalar.txt" 2>&1
check "OPGATE_ISA=scalar pins the references' path" grep -q '(references use scalar' "$WORK/version_scalar.txt"

echo "cli tests: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
