#!/usr/bin/env bash
# A golden change a reviewer can act on (issue 24): `golden diff` lists the changed elements (index,
# old -> new, ulps; the first --max-elements, then a count), flags a file that no longer matches its
# digest as corruption, `golden regen` leaves the folders of unchanged cases byte-identical (their
# manifests keep the harness_version they were written with), and `golden verify --filter` judges
# only the selected folders. Usage: golden_review_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
OP=moe_finalize_routing_v2_grad
SMOKE="$SRC/cases/$OP/smoke.json"
ID=mfrg.scales_dropless.f16.001
CLEAN="$WORK/clean"
"$OPGATE" golden regen --cases "$SMOKE" --out "$CLEAN" >/dev/null 2>&1
check "regen exits 0" test $? -eq 0
n_cases=$(ls "$CLEAN/$OP" | wc -l)

# The smoke file with case $ID reseeded: a one-case change of the reference's inputs and outputs.
python3 - "$SMOKE" "$WORK/reseeded.json" "$ID" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cases"]:
    if c["id"] == sys.argv[3]: c["seed"] = c.get("seed", 1) + 1000
json.dump(d, open(sys.argv[2], "w"))
P

# --- diff: the changed elements, the first N of each tensor, then how many more ---
cp -r "$CLEAN" "$WORK/new"
"$OPGATE" golden regen --cases "$WORK/reseeded.json" --out "$WORK/new" >/dev/null 2>&1
"$OPGATE" golden diff "$CLEAN" --out "$WORK/new" >"$WORK/diff.txt" 2>&1
check "a reseeded case is a difference (exit 1)" test $? -eq 1
check "the reseeded case is CHANGED" grep -q "^CHANGED    $OP/$ID$" "$WORK/diff.txt"
element='^      \[[0-9]+(, [0-9]+)*\]: [-+.e0-9a-z]+ -> [-+.e0-9a-z]+ \((.* ulp of [a-z0-9]+|by .*|not finite)\)$'
check "changed elements with index, old -> new and ulps" grep -qE "$element" "$WORK/diff.txt"
check "an expected float16 element in float16 ulps" grep -qE '^      \[[0-9, ]+\]: .* ulp of float16\)$' "$WORK/diff.txt"
# At most 10 element lines below each tensor line by default.
most() {  # most <file>: the largest run of element lines under one tensor
  awk -v re="$element" '$0 ~ re { n++; if (n > m) m = n; next } { n = 0 } END { print m + 0 }' "$1"
}
check "at most 10 elements per tensor by default" test "$(most "$WORK/diff.txt")" -le 10
check "then the count of the others" grep -qE '^      \.\.\. [0-9]+ more changed element\(s\)' "$WORK/diff.txt"
"$OPGATE" golden diff "$CLEAN" --out "$WORK/new" --max-elements 2 >"$WORK/diff2.txt" 2>&1
check "--max-elements 2 lists two per tensor" test "$(most "$WORK/diff2.txt")" -eq 2
check "the unchanged cases are identical" \
  grep -q "0 corrupted, $((n_cases - 1)) identical" "$WORK/diff.txt"

# --- a hand-edited file whose digest no longer matches is corruption, not a change ---
cp -r "$CLEAN" "$WORK/edited"
file=$(ls "$WORK/edited/$OP/$ID/expected/"*.npy | grep -v -E '\.(mag|care|slack)\.npy$' | head -1)
python3 - "$file" <<'P'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[-1] ^= 0x01; open(p, "wb").write(bytes(b))
P
"$OPGATE" golden diff "$CLEAN" --out "$WORK/edited" >"$WORK/diff_edited.txt" 2>&1
check "a corrupted file: exit 1" test $? -eq 1
check "flagged CORRUPTED" grep -q "^CORRUPTED  $OP/$ID$" "$WORK/diff_edited.txt"
check "naming the file and its digest" grep -qF "$file: sha256 differs from manifest.json" "$WORK/diff_edited.txt"
check "not shown as an ordinary change" test "$(grep -c '^CHANGED' "$WORK/diff_edited.txt")" -eq 0

# --- regen rewrites only the folder whose case changed ---
cp -r "$CLEAN" "$WORK/r"
for m in "$WORK/r/$OP"/*/manifest.json; do  # as an older build would have written them
  python3 - "$m" <<'P'
import json, sys
p = sys.argv[1]; m = json.load(open(p)); m["harness_version"] = "0.0.0-older"
open(p, "w").write(json.dumps(m, indent=2) + "\n")
P
done
cp -r "$WORK/r" "$WORK/r_before"
"$OPGATE" golden regen --cases "$WORK/reseeded.json" --out "$WORK/r" >"$WORK/regen.txt" 2>&1
check "regen exits 0" test $? -eq 0
changed=$(diff -rq "$WORK/r_before" "$WORK/r" | wc -l)
check "one case folder differs after a one-case change ($changed files)" \
  test "$(diff -rq "$WORK/r_before" "$WORK/r" | grep -vc "/$ID/")" -eq 0 -a "$changed" -gt 0
check "the other manifests are byte-identical" \
  test "$(diff -rq "$WORK/r_before" "$WORK/r" | grep -c manifest.json)" -eq 1
check "regen says which folders it left unchanged" \
  test "$(grep -c '^unchanged ' "$WORK/regen.txt")" -eq "$((n_cases - 1))"
check "and which it wrote" grep -qx "wrote $WORK/r/$OP/$ID" "$WORK/regen.txt"

# --- verify --filter judges only the selected folders ---
"$OPGATE" golden verify --out "$WORK/edited" --cases "$SMOKE" --filter "^$ID\$" >"$WORK/verify.txt" 2>&1
check "verify --filter on the corrupted case: exit 1" test $? -eq 1
check "verify --filter judges one folder" grep -q "^golden: 1 case(s), 0 ok, 1 mismatched" "$WORK/verify.txt"
other=$(ls "$CLEAN/$OP" | grep -vx "$ID" | head -1)
"$OPGATE" golden verify --out "$WORK/edited" --cases "$SMOKE" --filter "^$other\$" >"$WORK/verify.txt" 2>&1
check "verify --filter on another case: exit 0" test $? -eq 0
check "and names only that folder" test "$(grep -c '^ok ' "$WORK/verify.txt")" -eq 1
expect_error 2 "--filter '\(': invalid regular expression" golden verify --out "$CLEAN" --cases "$SMOKE" --filter '('
echo "golden_review: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
