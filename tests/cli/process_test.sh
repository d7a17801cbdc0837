#!/usr/bin/env bash
# The run as a process among others: the report folder's lock (a second run, --resume, merge and
# baseline accept refuse a folder being written, naming the holder), no symbolic link followed in a
# report folder, case children dying with the run (kill -9), SIGINT / SIGTERM ending a run with its
# reports and the --resume command, and per-tensor fill overrides through the runner.
# Usage: process_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
SMOKE="$SRC/cases/moe_finalize_routing_v2_grad/smoke.json"

# A case file: quick smoke cases around one case that computes for a while on emu (a 2048-token
# MoeFFN with 2048 x 2816 weights: about 2^34 multiply-adds in the reference and again in the
# emulator, 2-3 s on 2 cores), so that a signal or a kill lands while a case child is running.
python3 - "$SRC/cases/moe_ffn/smoke.json" "$WORK/slow.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
quick = d["cases"][:2]
slow = {"id": "mffn.process_test_slow.f16.001",
        "params": {"expertTokens": [2048], "K1": 2048, "N1": 2816, "bias1": True, "bias2": True},
        "seed": 7, "fill": "realistic"}
d["cases"] = [quick[0], slow, quick[1]]
json.dump(d, open(sys.argv[2], "w"))
P
SLOW="$WORK/slow.json"
N_SLOW=3

# wait_for <seconds> <command...>: polls every 20 ms until the command succeeds; false on timeout.
wait_for() {
  local deadline=$(( $(date +%s%N) + $1 * 1000000000 )); shift
  until "$@"; do
    [ "$(date +%s%N)" -lt "$deadline" ] || return 1
    sleep 0.02
  done
}
child_of() { pgrep -P "$1" | head -n 1; }
# alive <pid>: a process that still runs (a zombie waiting for its new parent to reap it is dead).
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$st" ] && [ "${st:0:1}" != Z ]; }
dead() { ! alive "$1"; }
has_child() { [ -n "$(child_of "$1")" ]; }
lines_at_least() { [ -f "$1" ] && [ "$(grep -c . "$1")" -ge "$2" ]; }
# start_slow <out> [opgate args...]: the slow file in the background; waits until its first case is
# recorded and the slow case's child runs. Sets PID.
start_slow() {
  local out="$1"; shift
  "$OPGATE" run --cases "$SLOW" --out "$out" "$@" >"$WORK/bg_out.txt" 2>"$WORK/bg_err.txt" &
  PID=$!
  wait_for 60 lines_at_least "$out/results.jsonl" 1 && wait_for 60 has_child "$PID"
}

# --- the lock: a second run on the folder is refused, naming the holder ---
if start_slow "$WORK/locked"; then
  passes=$((passes + 1))
  host=$(hostname)
  expect_error 2 "locked: being written by pid $PID on host $host since [0-9-]+T[0-9:]+Z \(.*locked/run.lock\); wait for it to end or use another --out" \
    run --cases "$SMOKE" --out "$WORK/locked"
  expect_error 2 "locked: being written by pid $PID " run --cases "$SLOW" --out "$WORK/locked" --resume
  expect_error 2 "locked: being written by pid $PID " baseline accept "$WORK/locked" --to "$WORK/bl"
  check "baseline accept wrote nothing" test ! -e "$WORK/bl"
  expect_error 2 "locked: being written by pid $PID " merge "$WORK/locked" --out "$WORK/merged"
  check "the refused runs left results.jsonl to its writer" test "$(grep -c . "$WORK/locked/results.jsonl")" -le "$N_SLOW"
  # --- kill -9: the case child dies with the run ---
  CHILD=$(child_of "$PID")
  t0=$(date +%s%N)
  kill -9 "$PID"
  wait "$PID" 2>/dev/null
  wait_for 5 dead "$CHILD"
  t1=$(date +%s%N)
  ms=$(( (t1 - t0) / 1000000 ))
  echo "kill -9 of the run: its case child $CHILD gone after $ms ms"
  check "the case child died within 1 s of kill -9 of its run ($ms ms)" test "$ms" -le 1000
  check "the case child is not running" dead "$CHILD"
  # The kernel dropped the dead run's lock: resume takes the folder and completes it.
  "$OPGATE" run --cases "$SLOW" --out "$WORK/locked" --resume -q >/dev/null 2>"$WORK/err.txt"
  check "resume after kill -9 completes" test $? -eq 0
  check "resume after kill -9 has every case once" test "$(grep -c . "$WORK/locked/results.jsonl")" -eq "$N_SLOW"
else
  echo "FAIL: the slow run never reached its slow case"; cat "$WORK/bg_err.txt"; failures=$((failures + 1))
  kill -9 "$PID" 2>/dev/null
fi

# --- SIGINT and SIGTERM: reports for what finished, the resume command, 128 + signal ---
for sig in INT TERM; do
  code=$([ "$sig" = INT ] && echo 130 || echo 143)
  out="$WORK/sig_$sig"
  if ! start_slow "$out"; then
    echo "FAIL: SIG$sig: the slow run never reached its slow case"; failures=$((failures + 1)); kill -9 "$PID"; continue
  fi
  CHILD=$(child_of "$PID")
  kill -s "$sig" "$PID"
  wait "$PID"; got=$?
  check "SIG$sig: exit $code (got $got)" test "$got" -eq "$code"
  check "SIG$sig: the running case's child was killed" dead "$CHILD"
  for f in summary.txt junit.xml report.html; do check "SIG$sig: $f written" test -s "$out/$f"; done
  check "SIG$sig: the finished case is recorded, the interrupted one is not" \
    test "$(grep -c . "$out/results.jsonl")" -eq 1
  check "SIG$sig: summary.txt counts the finished case" grep -q "^cases:1 passed:1 " "$out/summary.txt"
  check "SIG$sig: junit.xml holds one test" grep -q '<testsuites name="opgate" tests="1" failures="0" errors="0"' "$out/junit.xml"
  check "SIG$sig: stderr says what stopped the run" grep -q "^opgate: stopped by SIG$sig with 1 of $N_SLOW cases done" "$WORK/bg_err.txt"
  resume=$(sed -n 's/^opgate: continue with: //p' "$WORK/bg_err.txt")
  check "SIG$sig: stderr prints the resume command, with this binary's absolute path" \
    test "${resume%% *}" = "$(realpath "$OPGATE")"
  # The printed command, as printed (its quoting included), completes the run.
  eval "$resume" >/dev/null 2>"$WORK/err.txt"
  check "SIG$sig: the printed resume command completes the run" test $? -eq 0
  check "SIG$sig: after resume every case has one result" test "$(grep -c . "$out/results.jsonl")" -eq "$N_SLOW"
  check "SIG$sig: the resumed summary counts every case" grep -q "^cases:$N_SLOW passed:$N_SLOW " "$out/summary.txt"
done

# --- a second SIGINT aborts at once (in one process, the first lets the current case finish) ---
out="$WORK/sig_twice"
"$OPGATE" run --cases "$SLOW" --out "$out" --no-isolate --filter process_test_slow >/dev/null 2>"$WORK/bg_err.txt" &
PID=$!
wait_for 60 test -s "$out/run.lock"
sleep 0.3  # inside the slow case (no child to wait for in one process)
kill -s INT "$PID"; sleep 0.1; t0=$(date +%s%N); kill -s INT "$PID"
wait "$PID"; got=$?; t1=$(date +%s%N)
check "a second SIGINT exits 130 (got $got)" test "$got" -eq 130
check "a second SIGINT exits within 1 s ($(( (t1 - t0) / 1000000 )) ms)" test $(( (t1 - t0) / 1000000 )) -le 1000
check "a second SIGINT records nothing" test "$(grep -c . "$out/results.jsonl")" -eq 0

# --- no symbolic link in a report folder is followed ---
printf 'precious\n' >"$WORK/outside.txt"; cp "$WORK/outside.txt" "$WORK/outside.orig"
mkdir -p "$WORK/ln_results" "$WORK/outside_dir"
ln -s "$WORK/outside.txt" "$WORK/ln_results/results.jsonl"
expect_error 2 "ln_results/results.jsonl: a symbolic link; opgate never writes through links" run --cases "$SMOKE" --out "$WORK/ln_results"
expect_error 2 "ln_results/results.jsonl: a symbolic link" run --cases "$SMOKE" --out "$WORK/ln_results" --resume
check "the file a results.jsonl link points at is byte-identical" cmp -s "$WORK/outside.txt" "$WORK/outside.orig"
check "nothing else was written beside the link" test "$(ls -A "$WORK/ln_results" | grep -v '^run.lock$' | tr '\n' ' ')" = "results.jsonl "
mkdir -p "$WORK/ln_failed"
ln -s "$WORK/outside_dir" "$WORK/ln_failed/failed"
expect_error 2 "ln_failed/failed: a symbolic link; opgate never writes through links" \
  run --cases "$SMOKE" --out "$WORK/ln_failed" --backend fault:mfrg.k_major_index
check "nothing was written into the folder a failed/ link points at" test -z "$(ls -A "$WORK/outside_dir")"
for name in summary.txt run.json run.lock; do
  mkdir -p "$WORK/ln_$name"; ln -s "$WORK/outside.txt" "$WORK/ln_$name/$name"
  expect_error 2 "ln_$name/$name: a symbolic link" run --cases "$SMOKE" --out "$WORK/ln_$name"
done
check "no link target changed" cmp -s "$WORK/outside.txt" "$WORK/outside.orig"
mkdir -p "$WORK/notdir"; : >"$WORK/notdir/failed"
expect_error 2 "notdir/failed: not a folder" run --cases "$SMOKE" --out "$WORK/notdir"

# --- interleaved results (two writers before locks): baseline accept and merge refuse them ---
"$OPGATE" run --cases "$SMOKE" --out "$WORK/dup" -q >/dev/null 2>&1
head -n 1 "$WORK/dup/results.jsonl" >>"$WORK/dup/results.jsonl"
n=$(grep -c . "$WORK/dup/results.jsonl")
expect_error 2 "dup/results.jsonl: line $n: second result for case '[^']+' \(first at line 1\)" \
  baseline accept "$WORK/dup" --to "$WORK/bl_dup"
check "baseline accept wrote nothing for interleaved results" test ! -e "$WORK/bl_dup"

# --- per-tensor fills: errors name file, case, tensor and field; extremes run on every operator ---
python3 - "$SMOKE" "$WORK/fills_bad.json" "$WORK/fills_ok.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
first = d["cases"][0]
bad = dict(first, tensors={"gradY": {"fill": {"extreme": "tiny"}}})
json.dump(dict(d, cases=[bad]), open(sys.argv[2], "w"))
ok = []
for n, cls in enumerate(["subnormal", "near_max", "signed_zero"]):
    ok.append(dict(first, id=f"{first['id']}.x{cls}", tensors={"gradY": {"fill": {"extreme": cls}}}))
ok.append(dict(first, id=first["id"] + ".xvalues", tensors={"gradY": {"fill": {"values": [0.0, -0.0, 1e-40, 3.5, -2.25]}}}))
json.dump(dict(d, cases=ok), open(sys.argv[3], "w"))
P
expect_error 2 "fills_bad.json: cases\[0\]: case 'mfrg.copy_no_scales.f32.001': field 'tensors.gradY.fill.extreme': unknown extreme class 'tiny'" \
  run --cases "$WORK/fills_bad.json" --out "$WORK/fills_bad"
check "a bad fill writes no report" test ! -e "$WORK/fills_bad"
"$OPGATE" run --cases "$WORK/fills_ok.json" --out "$WORK/fills_ok" -q >"$WORK/fills.txt" 2>&1
check "extreme and value fills of an fp32 tensor pass on emu" grep -q "^cases:4 passed:4 " "$WORK/fills_ok/summary.txt"
# A value not representable in the tensor's dtype stops the run before it writes.
python3 - "$SRC/cases/moe_ffn/smoke.json" "$WORK/fills_range.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"] = [dict(d["cases"][0], tensors={"x": {"fill": {"values": [1e9]}}})]
json.dump(d, open(sys.argv[2], "w"))
P
expect_error 2 "fills_range.json: cases\[0\]: case 'mffn.fastgelu_bias.f16.001': field 'tensors.x.fill': values\[0\]: 1e\+09 overflows float16" \
  run --cases "$WORK/fills_range.json" --out "$WORK/fills_range"
# Values written into an integer index tensor that break the call's preconditions: the operator's
# data checks make it INVALID_CASE, not a crash.
python3 - "$SMOKE" "$WORK/fills_index.json" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
d["cases"] = [dict(d["cases"][0], tensors={"expandedRowIdx": {"fill": {"values": [-5]}}})]
json.dump(d, open(sys.argv[2], "w"))
P
"$OPGATE" run --cases "$WORK/fills_index.json" --out "$WORK/fills_index" -q >"$WORK/fills.txt" 2>&1
check "an index fill that breaks the call fails the gate (exit 1)" test $? -eq 1
check "an index fill that breaks the call is INVALID_CASE" grep -q '"verdict":"INVALID_CASE"' "$WORK/fills_index/results.jsonl"
# Generated cases with one extreme fill each (subnormal, near_max, signed_zero) on every operator:
# each finishes with a verdict from the comparison or the data checks, never a crash.
for op in ffn_worker_batching moe_finalize_routing_v2_grad incre_flash_attention_v3 moe_ffn; do
  "$OPGATE" run --generate 3 --extreme-fills --op "$op" --size small --out "$WORK/x_$op" -q >"$WORK/x.txt" 2>&1
  got=$?
  check "$op: extreme fills run (exit $got)" test "$got" -le 1
  check "$op: three results" test "$(grep -c . "$WORK/x_$op/results.jsonl" 2>/dev/null)" -eq 3
  check "$op: no CRASHED, TIMEOUT or BACKEND_ERROR" test "$(grep -cE '"verdict":"(CRASHED|TIMEOUT|BACKEND_ERROR)"' "$WORK/x_$op/results.jsonl" 2>/dev/null)" -eq 0
  echo "$op extreme fills: $(grep -E '^cases:' "$WORK/x_$op/summary.txt" 2>/dev/null)"
done
expect_error 2 "--extreme-fills needs --generate N" run --extreme-fills --out "$WORK/x_none"

echo "process: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
