#!/usr/bin/env bash
# Golden folders end to end: a corrupted file stops `run --against golden` before it blames the
# device; verify notices changed or removed cases and a manifest that disagrees with its folder; a
# run against golden cross-checks the recomputed reference.
# Usage: golden_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
# verify_says <description> <pattern> <verify args...>: exit 1 and a stdout line matching.
verify_says() {
  local what="$1" pattern="$2"; shift 2
  "$OPGATE" golden verify "$@" >"$WORK/verify.txt" 2>&1; local got=$?
  if [ "$got" -ne 1 ] || ! grep -qE -- "$pattern" "$WORK/verify.txt"; then
    echo "FAIL: $what: exit $got (want 1), output:"; cat "$WORK/verify.txt"; failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}
OP=moe_finalize_routing_v2_grad
SMOKE="$SRC/cases/$OP/smoke.json"
ID=mfrg.scales_dropless.f16.001
CLEAN="$WORK/golden_clean"; G="$WORK/golden"
fresh() { rm -rf "$G"; cp -r "$CLEAN" "$G"; }
# edit_manifest <python statement on m>: edits manifest.json of $ID in $G.
edit_manifest() {
  python3 - "$G/$OP/$ID/manifest.json" "$1" <<'P'
import json, sys
p = sys.argv[1]; m = json.load(open(p)); exec(sys.argv[2]); json.dump(m, open(p, "w"))
P
}

"$OPGATE" golden regen --cases "$SMOKE" --out "$CLEAN" >/dev/null 2>&1
check "golden regen exits 0" test $? -eq 0
"$OPGATE" golden verify --out "$CLEAN" --cases "$SMOKE" >/dev/null 2>&1
check "fresh golden verifies against its case file" test $? -eq 0

# --- a corrupted expected file: a harness error before anything runs, not a device failure ---
fresh
python3 -c "
p = '$G/$OP/$ID/expected/gradScalesOut.npy'; b = bytearray(open(p, 'rb').read()); b[-1] ^= 0x40; open(p, 'wb').write(b)"
expect_error 2 "$ID/expected/gradScalesOut.npy: sha256 differs from manifest.json" \
  run --cases "$SMOKE" --filter "$ID" --against golden --golden-root "$G" --out "$WORK/r_corrupt"
check "no report folder after a corrupted golden file" test ! -e "$WORK/r_corrupt"
verify_says "verify names the corrupted file" "$ID: file corrupted" --out "$G" --cases "$SMOKE"

# --- format 1 (no magnitude files): golden and reference disagree, and the run cross-checks them
# (digest made consistent) ---
fresh
python3 - "$G/$OP/$ID" <<'P'
import hashlib, json, os, struct, sys
d = sys.argv[1]; m = json.load(open(d + "/manifest.json")); m["format"] = 1
for rel in [r for r in m["tensors"] if r.endswith(".mag.npy")]:
    del m["tensors"][rel]; os.remove(d + "/" + rel)
json.dump(m, open(d + "/manifest.json", "w"))
p = d + "/expected/gradScalesOut.npy"; b = bytearray(open(p, "rb").read())
struct.pack_into("<d", b, len(b) - 8, struct.unpack_from("<d", b, len(b) - 8)[0] + 0.5)
open(p, "wb").write(b)
m = json.load(open(d + "/manifest.json"))
m["tensors"]["expected/gradScalesOut.npy"]["sha256"] = hashlib.sha256(b).hexdigest()
json.dump(m, open(d + "/manifest.json", "w"))
P
"$OPGATE" run --cases "$SMOKE" --filter "$ID" --against golden --golden-root "$G" --out "$WORK/r_disagree" -q >"$WORK/run.txt" 2>&1
check "a disagreeing golden fails the run" test $? -eq 1
check "the run says golden and reference disagree" grep -q "FAILED .*$ID .*golden and reference disagree: gradScalesOut" "$WORK/run.txt"
check "a format 1 run says once that it recomputes the magnitudes" \
  test "$(grep -c "^note: 1 golden case(s) are format 1, which stores no tolerance magnitudes" "$WORK/run.txt")" -eq 1
verify_says "verify says reference changed" "$ID: reference changed" --out "$G" --cases "$SMOKE"

# --- format 2: the magnitudes are stored, a run computes no reference; damaged files are named ---
ID2=mfrg.bias_scales_dropless.bf16.001  # realistic: gradScalesOut under `bound`
MAG="$G/$OP/$ID2/expected/gradScalesOut.mag.npy"
check "regen writes format 2" grep -q '"format": 2' "$CLEAN/$OP/$ID2/manifest.json"
check "regen writes the magnitudes" test -s "$CLEAN/$OP/$ID2/expected/gradScalesOut.mag.npy"
"$OPGATE" run --cases "$SMOKE" --against golden --golden-root "$CLEAN" --out "$WORK/r_f2" -q >"$WORK/run.txt" 2>&1
check "a format 2 run passes" test $? -eq 0
check "a format 2 run prints no format 1 note" test "$(grep -c "format 1" "$WORK/run.txt")" -eq 0
python3 - "$WORK/r_f2/results.jsonl" >"$WORK/ref_ms.txt" <<'P'
import json, sys
print(sum(json.loads(l)["stages_ms"]["reference"] for l in open(sys.argv[1])))
P
check "a format 2 run spends no time in the reference" test "$(cat "$WORK/ref_ms.txt")" = "0.0"
fresh; rm "$MAG"
expect_error 2 "$ID2/expected/gradScalesOut.mag.npy: cannot open" \
  run --cases "$SMOKE" --filter "$ID2" --against golden --golden-root "$G" --out "$WORK/r_nomag"
check "no report folder after a missing magnitude file" test ! -e "$WORK/r_nomag"
verify_says "verify names the missing magnitude file" "$ID2: file corrupted" --out "$G" --cases "$SMOKE"
fresh
python3 - "$G/$OP/$ID2" <<'P'
import hashlib, json, sys
d = sys.argv[1]; rel = "expected/gradScalesOut.mag.npy"; b = bytearray(open(d + "/" + rel, "rb").read())
b[b.index(b"<f8"):b.index(b"<f8") + 3] = b"<f4"  # same bytes read as float32: twice the elements
open(d + "/" + rel, "wb").write(b)
m = json.load(open(d + "/manifest.json")); m["tensors"][rel]["sha256"] = hashlib.sha256(b).hexdigest()
m["tensors"][rel].pop("shape"); json.dump(m, open(d + "/manifest.json", "w"))
P
expect_error 2 "$ID2/expected/gradScalesOut.mag.npy: " \
  run --cases "$SMOKE" --filter "$ID2" --against golden --golden-root "$G" --out "$WORK/r_f4mag"
verify_says "verify names a float32 magnitude file" "$ID2: file corrupted" --out "$G" --cases "$SMOKE"

# --- the manifest must belong to its folder ---
fresh; edit_manifest "m['case_id'] = 'zzz'"
verify_says "verify checks case_id" "$ID: file corrupted" --out "$G" --cases "$SMOKE"
check "verify names the case_id field" grep -q "manifest.json: field 'case_id': \"zzz\"" "$WORK/verify.txt"
expect_error 2 "$ID/manifest.json: field 'case_id'" run --cases "$SMOKE" --filter "$ID" --against golden --golden-root "$G" --out "$WORK/r_id"
fresh; edit_manifest "m['op'] = 'MoeFfn'"
verify_says "verify checks op" "manifest.json: field 'op'" --out "$G" --cases "$SMOKE"
fresh; edit_manifest "m['format'] = 3"
verify_says "verify checks format" "manifest.json: field 'format': 3, this harness reads formats 1 to 2" --out "$G" --cases "$SMOKE"
fresh; edit_manifest "m['tensors'] = {}"
verify_says "a manifest listing no tensors is corrupted" "$ID: file corrupted$" --out "$G" --cases "$SMOKE"
fresh; edit_manifest "m['reference_version'] = 99"
verify_says "another reference_version is a reference change" "$ID: reference changed" --out "$G" --cases "$SMOKE"
check "verify names both versions" grep -q "reference_version 99, the current reference is version" "$WORK/verify.txt"

# --- the case files must still hold each golden case, unchanged ---
fresh
mkdir -p "$WORK/repo/cases/$OP"
python3 - "$SMOKE" "$WORK/repo/cases/$OP/smoke.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"] = [c for c in d["cases"] if c["id"] != "mfrg.copy_no_scales.f32.001"]
for c in d["cases"]:
    if c["id"] == "mfrg.scales_dropless.f16.001":
        c["params"]["H"] = 64
json.dump(d, open(sys.argv[2], "w"))
P
verify_says "verify notices an edited case" "$ID: case changed$" --out "$G" --root "$WORK/repo"
check "verify names the changed field" grep -q "params.H: golden 32, case file 64" "$WORK/verify.txt"
check "verify notices a removed case" grep -q "mfrg.copy_no_scales.f32.001: case removed" "$WORK/verify.txt"
check "verify says regen removes it" grep -qF "\`opgate golden regen --op $OP\` removes the folder" "$WORK/verify.txt"
check "verify counts the two" grep -q "golden: 6 case(s), 4 ok, 2 mismatched" "$WORK/verify.txt"
verify_says "--cases names the case files" "$ID: case changed" --out "$G" --cases "$WORK/repo/cases/$OP/smoke.json"
expect_error 2 "nowhere.json" golden verify --out "$G" --cases "$WORK/nowhere.json"

# --- a run against golden refuses a case edited since regen, naming the field, not the reference ---
"$OPGATE" run --cases "$WORK/repo/cases/$OP/smoke.json" --filter "$ID" --against golden --golden-root "$G" \
  --out "$WORK/r_edited" -q >"$WORK/run.txt" 2>&1
check "a case edited since regen fails the run" test $? -eq 1
check "the run says the case changed" grep -qF "case changed since golden regen: params.H (golden 32, now 64); run \`opgate golden regen\`" "$WORK/run.txt"
check "the run does not blame the reference" test "$(grep -c "disagree" "$WORK/run.txt")" -eq 0

# --- verify --cases checks only the operators of those files ---
fresh; mkdir -p "$G/moe_ffn/mffn.other_op.f16.001"
"$OPGATE" golden verify --out "$G" --cases "$SMOKE" >"$WORK/verify.txt" 2>&1
check "verify --cases ignores another operator's folders" test $? -eq 0
check "verify --cases does not list them" test "$(grep -c moe_ffn "$WORK/verify.txt")" -eq 0

# --- regen of an operator's whole set removes folders whose case is gone; regen --cases never does ---
fresh
mkdir -p "$WORK/repo2/cases/$OP"
python3 - "$SMOKE" "$WORK/repo2/cases/$OP/smoke.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"] = [c for c in d["cases"] if c["id"] != "mfrg.copy_no_scales.f32.001"]
json.dump(d, open(sys.argv[2], "w"))
P
"$OPGATE" golden regen --cases "$WORK/repo2/cases/$OP/smoke.json" --out "$G" >"$WORK/regen.txt" 2>&1
check "regen --cases keeps folders of other cases" test -d "$G/$OP/mfrg.copy_no_scales.f32.001"
"$OPGATE" golden regen --op "$OP" --root "$WORK/repo2" --out "$G" >"$WORK/regen.txt" 2>&1
check "regen --op exits 0" test $? -eq 0
check "regen names the folder it removed" grep -qx "removed $G/$OP/mfrg.copy_no_scales.f32.001" "$WORK/regen.txt"
check "the removed case's folder is gone" test ! -e "$G/$OP/mfrg.copy_no_scales.f32.001"
check "regen removes nothing else" test "$(grep -c '^removed' "$WORK/regen.txt")" -eq 1
"$OPGATE" golden verify --out "$G" --root "$WORK/repo2" >/dev/null 2>&1
check "after regen the golden files verify" test $? -eq 0

# --- golden diff --rev: only a commit reaches git, and the scratch folder never outlives the command ---
if command -v git >/dev/null; then
  GIT="$WORK/gitrepo"; mkdir -p "$GIT" "$WORK/tmp"; cp -r "$CLEAN" "$GIT/golden"
  git -C "$GIT" init -q && git -C "$GIT" add golden && git -C "$GIT" -c user.name=t -c user.email=t@t commit -qm golden
  export TMPDIR="$WORK/tmp"
  # Scratch folders go to $TMPDIR; a harness that ignored it would leak into /tmp.
  in_tmp() { ls -d /tmp/opgate_golden_?????? 2>/dev/null | sort; }
  tmp_before=$(in_tmp)
  expect_error 2 "^opgate: error: /nonexistent: no such golden folder" golden diff --rev HEAD --root "$GIT" --out /nonexistent
  check "no scratch folder left after an error" test -z "$(ls -A "$WORK/tmp")"
  check "no scratch folder left in /tmp either" test "$(in_tmp)" = "$tmp_before"
  expect_error 2 "--rev '-o.*': a revision may not start with '-'" golden diff --rev "-o$WORK/x.tar" --root "$GIT"
  check "an option-like revision writes nothing" test ! -e "$WORK/x.tar"
  expect_error 2 "$GIT: cannot extract golden/ of revision 'nosuch': not a commit" golden diff --rev nosuch --root "$GIT"
  "$OPGATE" golden diff --rev HEAD --root "$GIT" --out "$CLEAN" >"$WORK/diff.txt" 2>&1
  check "the committed golden files diff identical" test $? -eq 0
  fresh
  python3 - "$G/$OP/$ID/case.json" <<'P'
import json, sys
p = sys.argv[1]; d = json.load(open(p)); d["params"]["H"] = 64; d["seed"] = 9; json.dump(d, open(p, "w"))
P
  "$OPGATE" golden diff --rev HEAD --root "$GIT" --out "$G" >"$WORK/diff.txt" 2>&1
  check "an edited case.json is a difference" test $? -eq 1
  check "diff notes each changed case field" grep -qx "    case.json params.H: 32 -> 64" "$WORK/diff.txt"
  check "diff notes the seed on its own line" grep -qx "    case.json seed: 2 -> 9" "$WORK/diff.txt"
  check "no scratch folder left after a diff" test -z "$(ls -A "$WORK/tmp")"
  unset TMPDIR
fi

# --- a case without a golden folder (a ci or nightly case) is a harness error naming the folder ---
"$OPGATE" repro '{"id": "mfrg.nightly_not_golden.f16.001", "op": "moe_finalize_routing_v2_grad", "params": {"R": 2}}' \
  --against golden --golden-root "$G" >"$WORK/repro.txt" 2>&1
check "repro without a golden folder exits 1" test $? -eq 1
check "repro says there is no golden folder" grep -q "^INVALID_CASE .*$OP/mfrg.nightly_not_golden.f16.001: no golden folder" "$WORK/repro.txt"
rm -rf "$WORK/repo/cases"; mkdir -p "$WORK/repo/cases/$OP"
python3 -c "
import json; json.dump({'op': '$OP', 'cases': [{'id': 'mfrg.nightly_not_golden.f16.001', 'params': {'R': 2}}]},
                       open('$WORK/repo/cases/$OP/nightly.json', 'w'))"
expect_error 2 "case 'mfrg.nightly_not_golden.f16.001': .*no golden folder" \
  run --root "$WORK/repo" --op "$OP" --tier nightly --against golden --golden-root "$G" --out "$WORK/r_nightly"
check "no report folder when a case has no golden folder" test ! -e "$WORK/r_nightly"

# --- regen says what it skipped; verify names missing folders and interrupted swaps (issue 13) ---
python3 -c "
import json; json.dump({'op': '$OP', 'cases': [
  {'id': 'mfrg.mixed_ok.f32.001', 'params': {'dtype': 'float32', 'R': 4, 'H': 16, 'expertNum': 2}, 'fill': 'exact'},
  {'id': 'mfrg.mixed_reject.f32', 'params': {'R': 4}, 'tensors': {'gradY': {'dtype': 'int32'}}, 'expect': 161002}]},
  open('$WORK/mixed.json', 'w'))"
M="$WORK/golden_mixed"
"$OPGATE" golden regen --cases "$WORK/mixed.json" --out "$M" >"$WORK/regen.txt" 2>&1
check "regen of a mixed selection exits 0" test $? -eq 0
check "regen says which case it skipped and why" \
  grep -q "^skipped $WORK/mixed.json: cases\[1\]: case 'mfrg.mixed_reject.f32': expects aclnn code 161002" "$WORK/regen.txt"
check "regen wrote the other" test -s "$M/$OP/mfrg.mixed_ok.f32.001/manifest.json"
mv "$M/$OP/mfrg.mixed_ok.f32.001" "$M/$OP/.mfrg.mixed_ok.f32.001.old.2147483647"
"$OPGATE" golden verify --cases "$WORK/mixed.json" --out "$M" >"$WORK/verify.txt" 2>&1
check "verify fails on an interrupted swap" test $? -eq 1
check "verify names the missing folder" grep -q "^MISSING  $M/$OP/mfrg.mixed_ok.f32.001: no golden folder" "$WORK/verify.txt"
check "verify names the leftover" grep -q "^INTERRUPTED $M/$OP/.mfrg.mixed_ok.f32.001.old.2147483647" "$WORK/verify.txt"
"$OPGATE" golden regen --cases "$WORK/mixed.json" --out "$M" >"$WORK/regen.txt" 2>&1
check "regen recovers the swap" grep -q "^recovered $M/$OP/mfrg.mixed_ok.f32.001 from" "$WORK/regen.txt"
"$OPGATE" golden verify --cases "$WORK/mixed.json" --out "$M" >/dev/null 2>&1
check "after the recovery the folder verifies" test $? -eq 0

# --- a tolerance that accepts any value: regen never stores one (GoldenUnsound.* plants one in
# the reference's outputs), and verify and a run against golden name a planted one ---
# x near the fp16 maximum: the error bound of the fp16 hidden values overflows on y elements whose
# expected value is a finite fp16 number, first at y[0, 1] (-12927.58...). Such an element is
# beyond the kernel's range (issue 22): the golden case stores care 0 and a zero magnitude there,
# not an infinite tolerance, and runs against golden as against the reference.
cat >"$WORK/near_max.json" <<'J'
{"op": "moe_ffn", "cases": [{"id": "mffn.near_max_x.f16.001", "params": {"K1": 15, "M": 20, "N1": 35, "activation": "silu", "bias1": false, "bias2": true, "dtype": "float16", "expertTokens": [0, 0, 4, 6, 10], "innerPrecise": 0, "yDtype": "float16"}, "seed": 7000028, "fill": "realistic", "tensors": {"x": {"fill": {"extreme": "near_max"}}}}]}
J
"$OPGATE" golden regen --cases "$WORK/near_max.json" --out "$WORK/g_near_max" >/dev/null 2>&1
check "a near-max case regenerates" test $? -eq 0
numpy_python
"$PY" - "$WORK/g_near_max/moe_ffn/mffn.near_max_x.f16.001/expected" >"$WORK/near_max.txt" 2>&1 <<'P'
import sys, numpy as np
d = sys.argv[1]
y, mag, care = (np.load(f"{d}/y{s}.npy") for s in ("", ".mag", ".care"))
assert np.isfinite(mag).all(), "a non-finite magnitude is stored"
assert care[0, 1] == 0 and mag[0, 1] == 0, (care[0, 1], mag[0, 1])
assert abs(y[0, 1] + 12927.58) < 0.01, y[0, 1]
print("ok", int((care == 0).sum()), "of", care.size, "beyond the range")
P
check "the near-max golden case stores care 0 and a finite magnitude where the bound overflowed ($(cat "$WORK/near_max.txt" | tail -1))" \
  grep -q "^ok" "$WORK/near_max.txt"
"$OPGATE" run --root "$SRC" --cases "$WORK/near_max.json" --against golden --golden-root "$WORK/g_near_max" --strict -q \
  --out "$WORK/r_near_max" >/dev/null 2>&1
check "the near-max case passes against its golden file with --strict" test $? -eq 0
fresh
BOUND_ID=mfrg.bias_scales_dropless.bf16.001  # realistic: gradScalesOut under `bound`, with its .mag.npy
python3 - "$G/$OP/$BOUND_ID" <<'P'
import hashlib, json, struct, sys
d = sys.argv[1]; rel = "expected/gradScalesOut.mag.npy"; p = d + "/" + rel
b = bytearray(open(p, "rb").read()); struct.pack_into("<d", b, len(b) - 8, float("inf")); open(p, "wb").write(b)
m = json.load(open(d + "/manifest.json")); m["tensors"][rel]["sha256"] = hashlib.sha256(b).hexdigest()
json.dump(m, open(d + "/manifest.json", "w"))
P
verify_says "verify names a stored infinite magnitude" "$BOUND_ID: unsound tolerance" --out "$G" --cases "$SMOKE"
check "verify names the file and element" \
  grep -qE "gradScalesOut.mag.npy: a non-finite tolerance for a finite expected value \(element \[[0-9, ]+\] holds inf" "$WORK/verify.txt"
expect_error 2 "$BOUND_ID/expected/gradScalesOut.mag.npy: a non-finite tolerance for a finite expected value \\(element \\[4, 2\\] holds inf" \
  run --cases "$SMOKE" --filter "$BOUND_ID" --against golden --golden-root "$G" --out "$WORK/r_unsound"
check "no report folder after an unsound golden file" test ! -e "$WORK/r_unsound"

# --- the checked-in golden files (format 2): against golden and against the reference, the same
# verdicts, reasons and metrics, and no time in the reference against golden ---
"$OPGATE" run --root "$SRC" --tier smoke --tier regression --against golden --out "$WORK/r_checked_golden" -q \
  >"$WORK/run.txt" 2>&1
check "the checked-in golden cases pass against golden" test $? -eq 0
check "the checked-in golden files are format 2 (no format 1 note)" test "$(grep -c "format 1" "$WORK/run.txt")" -eq 0
"$OPGATE" run --root "$SRC" --tier smoke --tier regression --out "$WORK/r_checked_ref" -q >/dev/null 2>&1
check "the same cases pass against the reference" test $? -eq 0
python3 - "$WORK/r_checked_golden/results.jsonl" "$WORK/r_checked_ref/results.jsonl" >"$WORK/both_ways.txt" 2>&1 <<'P'
import json, sys
def load(p):
    return {r["id"]: r for r in map(json.loads, open(p))}
golden, ref = load(sys.argv[1]), load(sys.argv[2])
bad = [] if sorted(golden) == sorted(ref) and golden else ["different or no case ids"]
for i, g in golden.items():
    r = ref.get(i, {})
    for k in ("verdict", "reason"):
        if g.get(k) != r.get(k): bad.append(f"{i}: {k} {g.get(k)!r} vs {r.get(k)!r}")
    outs = lambda x: [(o["name"], o["passed"], o["message"], o["metrics"]) for o in x.get("outputs", [])]
    if outs(g) != outs(r): bad.append(f"{i}: outputs or metrics differ")
    if g["stages_ms"]["reference"] != 0: bad.append(f"{i}: against golden, stages_ms.reference is not 0")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
P
check "both ways: same verdicts, reasons and metrics, no reference against golden ($(head -c 300 "$WORK/both_ways.txt"))" \
  test ! -s "$WORK/both_ways.txt"

echo "golden cli: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
