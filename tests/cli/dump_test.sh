#!/usr/bin/env bash
# Tensor dumps (run --dump-failed, repro --dump): NumPy loads them, and the values at the worst
# elements that failed/<id>.json reports are the ones in got/ and expected/; an unwritable or foreign
# dump folder is refused with one line naming it, and nothing is written.
source "$(dirname "$0")/lib.sh" "$@"
SMOKE="$SRC/cases/moe_finalize_routing_v2_grad/smoke.json"
numpy_python

# A defect that breaks exact and bound outputs; the cases cover bf16 (dumped as float32) and f16.
"$OPGATE" run --cases "$SMOKE" --filter 'adversarial_droppad|scales_active_num' --backend fault:mfrg.k_major_index \
  --out "$WORK/r" --dump-failed -q >"$WORK/run.txt" 2>&1
check "the fault run fails (exit 1)" test $? -eq 1
ids=$(cd "$WORK/r/failed" && ls *.json | sed 's/\.json$//')
check "two cases failed" test "$(echo "$ids" | wc -l)" -eq 2
for id in $ids; do
  check "$id: a dump folder with README.txt" grep -q "np.load" "$WORK/r/failed/$id/README.txt"
done

# Independent of the writer: NumPy reads each array; each reported worst element's expected, got
# and allowance are the arrays' values at its index; exact outputs mismatch exactly where got differs.
cat >"$WORK/check.py" <<'PYEOF'
import json, sys, numpy as np
report, ids = sys.argv[1], sys.argv[2:]
for cid in ids:
    d = f"{report}/failed/{cid}"
    res = json.load(open(f"{report}/failed/{cid}.json"))["result"]
    assert res["verdict"] == "FAILED", res["verdict"]
    for o in res["outputs"]:
        c = o; name = o["name"]
        got = np.load(f"{d}/got/{name}.npy"); exp = np.load(f"{d}/expected/{name}.npy")
        allow = np.load(f"{d}/allowance/{name}.npy")
        assert got.shape == exp.shape == allow.shape, (cid, name, got.shape, exp.shape)
        assert exp.dtype == np.float64, (cid, name, exp.dtype)
        want = {"bf16": np.float32, "f16": np.float16, "f32": np.float32}[cid.split(".")[2]]
        assert got.dtype == want, (cid, name, got.dtype)
        points = c.get("worst", []) + c.get("first_failures", [])
        assert points, (cid, name, "no worst points")
        for p in points:
            i = tuple(p["index"])
            assert float(got[i]) == p["got"], (cid, name, i, float(got[i]), p["got"])
            assert float(exp[i]) == p["expected"], (cid, name, i, float(exp[i]), p["expected"])
            assert float(allow[i]) == p["allowed"], (cid, name, i, float(allow[i]), p["allowed"])
        # An exact output fails where got differs from expected rounded to the device dtype (NaN
        # matches NaN, -0 is not +0); NumPy rounds float64 to float16 correctly (it has no bfloat16).
        if c["check"] == "exact" and got.dtype == np.float16:
            care = np.load(f"{d}/care/{name}.npy")
            er = exp.astype(np.float16)
            wrong = int(np.count_nonzero(care & ~(((got == er) & (np.signbit(got) == np.signbit(er))) | (np.isnan(got) & np.isnan(er)))))
            assert wrong == c["metrics"]["mismatches"], (cid, name, wrong, c["metrics"]["mismatches"])
            assert not np.any(allow[care]), (cid, name, "exact allowance not 0")
    for f in ("gradY", "expandedRowIdx"):
        np.load(f"{d}/inputs/{f}.npy")
print("ok")
PYEOF
check "numpy: worst elements and mismatch counts agree with failed/<id>.json" "$PY" "$WORK/check.py" "$WORK/r" $ids
bf=$(echo "$ids" | grep bf16 | head -1)
check "README says bf16 is written as float32" grep -q "bfloat16, written as float32" "$WORK/r/failed/$bf/README.txt"

# repro --dump of a failed case writes the same device output (the pipeline is deterministic).
"$OPGATE" repro "$WORK/r/failed/$bf.json" --dump "$WORK/d1" >"$WORK/repro.txt" 2>&1
check "repro of the failed case exits 1" test $? -eq 1
check "repro names the dump" grep -q "tensors: $WORK/d1" "$WORK/repro.txt"
check "repro's got equals the run's" "$PY" -c "import numpy as np,sys; assert np.array_equal(np.load(sys.argv[1]), np.load(sys.argv[2]), equal_nan=True)" \
  "$WORK/d1/got/gradScalesOut.npy" "$WORK/r/failed/$bf/got/gradScalesOut.npy"
# A previous dump is replaced whole.
touch "$WORK/d1/got/stale.npy"
"$OPGATE" repro "$WORK/r/failed/$bf.json" --dump "$WORK/d1" >/dev/null 2>&1
check "a second dump replaces the first" test ! -e "$WORK/d1/got/stale.npy" -a -e "$WORK/d1/got/gradScalesOut.npy"

# Unwritable or foreign folders: exit 2, one line naming the folder, nothing written.
echo keep >"$WORK/afile"
expect_error 2 "$WORK/afile/d: cannot write the tensor dump: $WORK/afile is not a folder" \
  repro "$WORK/r/failed/$bf.json" --dump "$WORK/afile/d"
check "the file is untouched" test "$(cat "$WORK/afile")" = keep
mkdir -p "$WORK/mine" && echo mine >"$WORK/mine/notes.txt"
expect_error 2 "$WORK/mine: holds files that are not an opgate tensor dump" repro "$WORK/r/failed/$bf.json" --dump "$WORK/mine"
check "the foreign folder is untouched" test "$(ls "$WORK/mine")" = notes.txt
check "no staging folder is left behind" test -z "$(find "$WORK" -name '*.partial.*')"

echo "dump_test: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
