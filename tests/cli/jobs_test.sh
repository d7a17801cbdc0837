#!/usr/bin/env bash
# -j N runs N cases at once (each in its own child) and writes the reports a serial run writes:
# results.jsonl (in case order), summary.txt and junit.xml equal once timings are masked, the same
# exit code, on a green run and on a fault run. Usage: jobs_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
masked() {  # masked <report dir>: its reports without timings, host or time stamps
  python3 - "$1" <<'P'
import json, re, sys
d = sys.argv[1]
for line in open(d + "/results.jsonl"):
    r = json.loads(line)
    r.pop("ms", None); r.pop("stages_ms", None)
    print(json.dumps(r, sort_keys=True))
for line in open(d + "/summary.txt"):
    if not line.startswith(("where the time went", "opgate run ")):
        print(line, end="")
print(re.sub(r'(time|timestamp|hostname)="[^"]*"', r'\1=""', open(d + "/junit.xml").read()))
P
}
for backend in emu fault:mfrg.scale_not_applied; do
  name=${backend//[:.]/_}
  "$OPGATE" run --root "$SRC" --op moe_finalize_routing_v2_grad --op ffn_worker_batching --tier ci --backend "$backend" \
    -q --out "$WORK/serial_$name" >/dev/null 2>&1
  serial=$?
  "$OPGATE" run --root "$SRC" --op moe_finalize_routing_v2_grad --op ffn_worker_batching --tier ci --backend "$backend" \
    -j 3 -q --out "$WORK/parallel_$name" >/dev/null 2>&1
  check "$backend: -j 3 exits as the serial run ($serial)" test $? -eq "$serial"
  masked "$WORK/serial_$name" >"$WORK/serial_$name.txt"
  masked "$WORK/parallel_$name" >"$WORK/parallel_$name.txt"
  check "$backend: -j 3 writes the serial run's reports (timings masked)" cmp -s "$WORK/serial_$name.txt" "$WORK/parallel_$name.txt"
  check "$backend: the reports are not empty" test "$(grep -c . "$WORK/serial_$name/results.jsonl")" -ge 90
done
# -x with -j: the failures before the stop are the serial run's, in order.
"$OPGATE" run --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci --backend fault:mfrg.scale_not_applied -x -j 3 -q \
  --out "$WORK/x" >/dev/null 2>&1
check "-x -j 3: exit 1" test $? -eq 1
check "-x -j 3: one failing case, the last one written" \
  test "$(grep -c '"verdict":"FAILED"' "$WORK/x/results.jsonl")-$(tail -1 "$WORK/x/results.jsonl" | grep -c '"verdict":"FAILED"')" = 1-1
expect_error 2 "-j/--jobs > 1 runs on emu and fault backends only" run --root "$SRC" --backend ascend -j 2 --out "$WORK/a"
echo "jobs: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
