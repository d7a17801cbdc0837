#!/usr/bin/env bash
# -j N runs N cases at once (each in its own child) and writes the reports a serial run writes:
# results.jsonl (in case order), summary.txt and junit.xml equal once timings are masked, the same
# exit code, on a green run and on a fault run. The default -j is the thread budget; the progress
# line is drawn in place on a terminal only. Usage: jobs_test.sh <opgate binary> <source dir> <scratch dir>
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
    if not line.startswith(("where the time went", "opgate run ", "started ")):  # "started": when it ran
        print(line, end="")
junit = re.sub(r'(time|timestamp|hostname)="[^"]*"', r'\1=""', open(d + "/junit.xml").read())
junit = re.sub(r'(<property name="(started_at|finished_at|duration_s)" value=)"[^"]*"', r'\1""', junit)
print(re.sub(r'<property name="jobs" value="[0-9]+"/>', '', junit))  # the setting itself differs
P
}
# The ci tier of every operator, serial and -j 4 (heaviest cases first, in other orders than the file's).
for backend in emu fault:mfrg.scale_not_applied; do
  name=${backend//[:.]/_}
  "$OPGATE" run --root "$SRC" --tier ci --backend "$backend" -j 1 -q --out "$WORK/serial_$name" >/dev/null 2>&1
  serial=$?
  "$OPGATE" run --root "$SRC" --tier ci --backend "$backend" -j 4 -q --out "$WORK/parallel_$name" >/dev/null 2>&1
  check "$backend: -j 4 exits as the serial run ($serial)" test $? -eq "$serial"
  masked "$WORK/serial_$name" >"$WORK/serial_$name.txt"
  masked "$WORK/parallel_$name" >"$WORK/parallel_$name.txt"
  check "$backend: -j 4 writes the serial run's reports (timings masked)" cmp -s "$WORK/serial_$name.txt" "$WORK/parallel_$name.txt"
  check "$backend: the reports are not empty" test "$(grep -c . "$WORK/serial_$name/results.jsonl")" -ge 200
done
# Without -j: as many cases at once as the thread budget (OPGATE_THREADS / --threads, default the cores).
# A bad OPGATE_THREADS is named as the variable that was set, not as --threads (never typed).
OPGATE_THREADS=abc expect_error 2 "^opgate: error: OPGATE_THREADS=abc: .*--threads" \
  run --root "$SRC" --op ffn_worker_batching --tier smoke -q --out "$WORK/threads_abc"
OPGATE_THREADS=abc expect_error 2 "^opgate: error: --threads: " \
  run --root "$SRC" --op ffn_worker_batching --tier smoke -q --threads x --out "$WORK/threads_abc"
OPGATE_THREADS=3 "$OPGATE" run --root "$SRC" --op ffn_worker_batching --tier smoke -q --out "$WORK/d3" >/dev/null 2>&1
check "default -j follows OPGATE_THREADS=3" grep -q '"jobs": 3' "$WORK/d3/run.json"
"$OPGATE" run --root "$SRC" --op ffn_worker_batching --tier smoke -q --threads 1 --out "$WORK/d1" >/dev/null 2>&1
check "default -j follows --threads 1" grep -q '"jobs": 1' "$WORK/d1/run.json"
# Progress: on a terminal (script(1) gives one) a line redrawn in place with done/total and
# failures; in a pipe, or with NO_COLOR or CI set, no terminal control characters at all.
if command -v script >/dev/null; then
  run_tty() { script -qec "$*" /dev/null </dev/null; }
  run_tty env -u NO_COLOR -u CI "$OPGATE" run --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci \
    --backend fault:mfrg.scale_not_applied -q --out "$WORK/tty" >"$WORK/tty.txt" 2>&1
  check "tty: the progress line is redrawn in place" grep -q $'\r\e\[K\[[ 0-9]*/[0-9]*\] [0-9]* failing' "$WORK/tty.txt"
  total=$(grep -c . "$WORK/tty/results.jsonl")
  failing=$(grep -c '"verdict":"FAILED"' "$WORK/tty/results.jsonl")
  check "tty: the last progress line counts every case ($total) and failure ($failing)" \
    grep -q "\[$total/$total\] $failing failing" "$WORK/tty.txt"
  run_tty env NO_COLOR=1 "$OPGATE" run --root "$SRC" --op ffn_worker_batching --tier smoke -q --out "$WORK/nc" >"$WORK/nc.txt" 2>&1
  check "NO_COLOR on a terminal: no line drawing" bash -c "! grep -q \$'\\e\\[K' '$WORK/nc.txt'"
  run_tty env CI=true "$OPGATE" run --root "$SRC" --op ffn_worker_batching --tier smoke -q --out "$WORK/ci" >"$WORK/ci.txt" 2>&1
  check "CI on a terminal: no line drawing" bash -c "! grep -q \$'\\e\\[K' '$WORK/ci.txt'"
fi
"$OPGATE" run --root "$SRC" --op ffn_worker_batching --tier smoke --out "$WORK/pipe" >"$WORK/pipe.txt" 2>&1
check "a pipe: no control characters" bash -c "! grep -q \$'[\\r\\e]' '$WORK/pipe.txt'"
check "a pipe: one verdict line per case" test "$(grep -c '^\[ *[0-9]*/[0-9]*\] PASSED' "$WORK/pipe.txt")" -eq \
  "$(grep -c . "$WORK/pipe/results.jsonl")"
# -x with -j: the failures before the stop are the serial run's, in order.
"$OPGATE" run --root "$SRC" --op moe_finalize_routing_v2_grad --tier ci --backend fault:mfrg.scale_not_applied -x -j 3 -q \
  --out "$WORK/x" >/dev/null 2>&1
check "-x -j 3: exit 1" test $? -eq 1
check "-x -j 3: one failing case, the last one written" \
  test "$(grep -c '"verdict":"FAILED"' "$WORK/x/results.jsonl")-$(tail -1 "$WORK/x/results.jsonl" | grep -c '"verdict":"FAILED"')" = 1-1
expect_error 2 "-j 2 on ascend needs one NPU per worker: --devices" run --root "$SRC" --backend ascend -j 2 --out "$WORK/a"
expect_error 2 "--devices 0,1: NPUs are for --backend ascend, not 'emu'" run --root "$SRC" --devices 0,1 --out "$WORK/a"
expect_error 2 "drop --no-isolate" run --root "$SRC" -j 2 --no-isolate --out "$WORK/a"
echo "jobs: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
