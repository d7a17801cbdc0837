#!/usr/bin/env bash
# `opgate fuzz-seeds`: each target's seeds have the shape its fuzz target reads. The golden-folder
# target reads case.json, a NUL byte, then manifest.json of one fixed case, so its seed must be
# exactly those two checked-in files joined by one NUL (built here independently with printf/cat).
# Usage: fuzz_seeds_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
GOLD="$SRC/golden/moe_finalize_routing_v2_grad/mfrg.copy_no_scales.f32.001"

"$OPGATE" fuzz-seeds --root "$SRC" --op golden_folder --out "$WORK/corpus" >"$WORK/out.txt" 2>"$WORK/err.txt"
check "fuzz-seeds --op golden_folder exits 0" test $? -eq 0
check "it reports one seed" grep -q "fuzz_golden_folder: 1 seed(s)" "$WORK/out.txt"
{ cat "$GOLD/case.json"; printf '\0'; cat "$GOLD/manifest.json"; } >"$WORK/expected_seed"
seed=$(find "$WORK/corpus/fuzz_golden_folder" -type f | head -1)
check "the seed is case.json NUL manifest.json" cmp -s "$seed" "$WORK/expected_seed"

"$OPGATE" fuzz-seeds --root "$SRC" --op case_file --out "$WORK/corpus" >"$WORK/out.txt" 2>&1
check "case_file seeds are case text" bash -c "head -c1 \"\$(find '$WORK/corpus/fuzz_case_file' -type f | head -1)\" | grep -q '{'"

echo "fuzz_seeds_test: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
