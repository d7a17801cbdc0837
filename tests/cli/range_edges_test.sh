#!/usr/bin/env bash
# `--extreme-fills` is a gate (issue 22): generated cases whose float inputs hold subnormals,
# near-max values or signed zeros all pass on the clean emulator with --strict, for every
# operator. Where the kernel's own fp16/fp32 precision can overflow, the reference declares the
# elements undefined and says so: results.jsonl counts them (metrics.beyond_range) and the
# output's message gives the reason. OPGATE_EXTREME_CASES (default 300) cases per operator;
# .ci/nightly runs thousands.
# Usage: range_edges_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
N="${OPGATE_EXTREME_CASES:-300}"
for op in $("$OPGATE" list --ops | awk '{print $1}'); do
  "$OPGATE" run --root "$SRC" --op "$op" --generate "$N" --extreme-fills --seed 7 --strict -q \
    --out "$WORK/$op" >"$WORK/$op.txt" 2>&1
  code=$?
  check "$op: $N extreme-fill cases pass with --strict (exit $code: $(grep -E '^(FAILED|MISTRUSTED)' "$WORK/$op/summary.txt" 2>/dev/null | head -2 | tr '\n' ' '))" \
    test "$code" -eq 0
done

# beyond_range: counted where the reference declared elements undefined, with the reason in the
# message and the passed reason; never on FfnWorkerBatching (byte copies and exact indices).
python3 - "$WORK" >"$WORK/beyond.txt" 2>&1 <<'P'
import json, sys
w = sys.argv[1]
for op in ("moe_finalize_routing_v2_grad", "moe_ffn", "incre_flash_attention_v3", "ffn_worker_batching"):
    cases = [json.loads(l) for l in open(f"{w}/{op}/results.jsonl")]
    beyond = [(c, o) for c in cases for o in c["outputs"] if o["metrics"].get("beyond_range", 0) > 0]
    if op == "ffn_worker_batching":
        assert not beyond, f"{op}: beyond_range on {beyond[0][0]['id']}"
        continue
    assert beyond, f"{op}: no case counts an element beyond the kernel's range"
    for c, o in beyond:
        n = o["metrics"]["beyond_range"]
        assert f"{n} element(s) not compared: " in o["message"], (c["id"], o["message"])
        assert "beyond the kernel's range not compared" in c["reason"], (c["id"], c["reason"])
        assert o["metrics"]["compared"] + n <= o["metrics"]["elements"], c["id"]
    print(op, len(beyond), "outputs with elements beyond the range")
print("ok")
P
check "beyond_range is counted and explained ($(tail -2 "$WORK/beyond.txt" | head -1))" grep -q "^ok" "$WORK/beyond.txt"

echo "range_edges_test: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
