#!/usr/bin/env bash
# Case selection on the command line: ids that are no safe file name, ids reused across the
# selected files, selections that match nothing (an error) versus shards that get nothing (an
# empty report), and one-line errors for bad --shard, shard variables, --timeout, repro names and
# defaults keys.
# Usage: selection_test.sh <opgate binary> <source dir> <scratch dir>
source "$(dirname "$0")/lib.sh" "$@"
OP=moe_finalize_routing_v2_grad
# one_case <file> <id>: a case file holding one small case with that id.
one_case() {
  printf '{"op": "%s", "cases": [{"id": "mfrg.first.f32", "params": {"R": 2}}, {"id": "%s", "params": {"R": 2}}]}\n' \
    "$OP" "$2" >"$1"
}

# --- ids are file names: checked at load, before anything is written ---
one_case "$WORK/escape.json" "../../../escaped"
expect_error 2 "escape.json: cases\[1\]: case '\.\./\.\./\.\./escaped': field 'id': contains \"\.\.\"" \
  run --cases "$WORK/escape.json" --out "$WORK/r_esc/deep/er" --backend fault:mfrg.k_major_index
check "no report folder for an escaping id" test ! -e "$WORK/r_esc"
one_case "$WORK/slash.json" "mfrg/sub.f32"
expect_error 2 "slash.json: cases\[1\]: case 'mfrg/sub.f32': field 'id': contains '/'" run --cases "$WORK/slash.json" --out "$WORK/r_slash"
check "no report folder for an id with a slash" test ! -e "$WORK/r_slash"
one_case "$WORK/dots.json" "mfrg..f32"
expect_error 2 "case 'mfrg\.\.f32': field 'id': contains \"\.\.\"" run --cases "$WORK/dots.json" --out "$WORK/r_dots"

# --- an id occurs once in the whole selection ---
one_case "$WORK/a.json" "mfrg.same.f32"
one_case "$WORK/b.json" "mfrg.same.f32"
sed -i 's/mfrg.first.f32/mfrg.other.f32/' "$WORK/b.json"
expect_error 2 "b.json: cases\[1\]: case 'mfrg.same.f32': duplicate case id \(also .*a.json: cases\[1\]\)" \
  run --cases "$WORK/a.json" --cases "$WORK/b.json" --out "$WORK/r_dup"
check "no report folder for a duplicate id" test ! -e "$WORK/r_dup"
"$OPGATE" run --cases "$WORK/a.json" --cases "$WORK/a.json" --out "$WORK/r_twice" -q >/dev/null 2>&1
check "a file named twice is read once" test "$(wc -l <"$WORK/r_twice/results.jsonl")" -eq 2
n_both=$(python3 -c "
import json
print(sum(len(json.load(open('$SRC/cases/$OP/%s.json' % t))['cases']) for t in ('smoke', 'ci')))")
"$OPGATE" list --op "$OP" --op mfrg --tier smoke --tier ci >"$WORK/list.txt" 2>&1
check "smoke and ci together list every case of both" grep -q "^$n_both case(s)" "$WORK/list.txt"
"$OPGATE" run --op "$OP" --tier smoke --tier ci --filter 'copy_no_scales' --out "$WORK/r_tiers" -q >/dev/null 2>&1
check "smoke and ci together run" test $? -eq 0
n_copy=$(python3 -c "
import json
print(sum(1 for t in ('smoke', 'ci') for c in json.load(open('$SRC/cases/$OP/%s.json' % t))['cases'] if 'copy_no_scales' in c['id']))")
check "smoke and ci together run every matching case" test "$(wc -l <"$WORK/r_tiers/results.jsonl")" -eq "$n_copy"

# --- an empty selection is an error; an empty shard of a real selection is not ---
expect_error 2 "no cases selected \(none of the [0-9]+ case\(s\) in .*smoke.json matches --filter 'NOMATCH'\)" \
  run --op "$OP" --tier smoke --filter NOMATCH --out "$WORK/r_none"
check "no report folder when nothing is selected" test ! -e "$WORK/r_none"
printf '{"op": "%s", "cases": []}\n' "$OP" >"$WORK/empty.json"
expect_error 2 "no cases selected \(.*empty.json holds no cases\)" run --cases "$WORK/empty.json" --out "$WORK/r_empty"
check "no report folder for an empty case file" test ! -e "$WORK/r_empty"
expect_error 2 "unknown operator" run --cases "$WORK/a.json" --op nope --out "$WORK/r_badop"
printf '{"op": "%s", "cases": [{"id": "mfrg.lonely.f32", "params": {"R": 2}}]}\n' "$OP" >"$WORK/lonely.json"
empty_shards=0
for i in 0 1; do
  "$OPGATE" run --cases "$WORK/lonely.json" --shard $i/2 --out "$WORK/r_shard$i" >"$WORK/shard$i.txt" 2>&1
  check "shard $i/2 of one case exits 0" test $? -eq 0
  check "shard $i/2 writes a summary" test -s "$WORK/r_shard$i/summary.txt"
  if grep -q "none of the 1 selected cases falls in this shard" "$WORK/shard$i.txt"; then
    empty_shards=$((empty_shards + 1))
    check "the empty shard's report counts no case" grep -q "^cases:0 " "$WORK/r_shard$i/summary.txt"
  fi
done
check "exactly one of two shards of one case is empty, and says so" test "$empty_shards" -eq 1

# --- one-line errors for bad command-line input ---
expect_error 2 "^opgate: error: nonexistent_file.json: no such case file$" repro nonexistent_file.json
expect_error 2 "<command line>: malformed JSON" repro '{"id": '
expect_error 2 "^opgate: error: $WORK/empty.json: holds no cases$" repro "$WORK/empty.json"
expect_error 2 "--shard '0/4abc': expected i/N" run --cases "$WORK/a.json" --shard 0/4abc
expect_error 2 "--shard ' 1/4': expected i/N" run --cases "$WORK/a.json" --shard ' 1/4'
export GTEST_TOTAL_SHARDS=4
expect_error 2 "GTEST_TOTAL_SHARDS=4 is set but GTEST_SHARD_INDEX is not" run --cases "$WORK/a.json" --out "$WORK/r_env"
check "the shard variables error does not name --shard" test -z "$(grep -e '--shard' "$WORK/err.txt")"
export GTEST_SHARD_INDEX=7
expect_error 2 "GTEST_SHARD_INDEX=7 GTEST_TOTAL_SHARDS=4: expected" run --cases "$WORK/a.json" --out "$WORK/r_env"
unset GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
check "no report folder after bad shard variables" test ! -e "$WORK/r_env"

# --- the schedulers' shard variables: one error naming the variables, exit 2, nothing written ---
# shard_env_error <pattern> <VAR=value...>: `run` under exactly those scheduler variables.
shard_env_error() {
  local pattern="$1"; shift
  local -a saved=(); local v
  for v in "$@"; do export "${v?}"; saved+=("${v%%=*}"); done
  expect_error 2 "$pattern" run --cases "$WORK/a.json" --out "$WORK/r_env"
  for v in "${saved[@]}"; do unset "$v"; done
  check "no report folder after bad shard variables ($*)" test ! -e "$WORK/r_env"
}
shard_env_error "^opgate: error: CI_NODE_INDEX=0 CI_NODE_TOTAL=3: expected integers with 1 <= index <= total \(GitLab" \
  CI_NODE_INDEX=0 CI_NODE_TOTAL=3
shard_env_error "CI_NODE_INDEX=4 CI_NODE_TOTAL=3: expected integers with 1 <= index <= total" CI_NODE_INDEX=4 CI_NODE_TOTAL=3
shard_env_error "CI_NODE_INDEX=two CI_NODE_TOTAL=3: expected integers" CI_NODE_INDEX=two CI_NODE_TOTAL=3
shard_env_error "CI_NODE_INDEX=1 CI_NODE_TOTAL=0: expected integers" CI_NODE_INDEX=1 CI_NODE_TOTAL=0
shard_env_error "CI_NODE_TOTAL=3 is set but CI_NODE_INDEX is not" CI_NODE_TOTAL=3
shard_env_error "CI_NODE_INDEX=2 is set but CI_NODE_TOTAL is not" CI_NODE_INDEX=2
shard_env_error "JOB_COMPLETION_INDEX=1 is set \(a Kubernetes Indexed Job\) but not the number of shards: set OPGATE_SHARD_TOTAL" \
  JOB_COMPLETION_INDEX=1
shard_env_error "JOB_COMPLETION_INDEX=3 OPGATE_SHARD_TOTAL=3: expected integers with 0 <= index < total" \
  JOB_COMPLETION_INDEX=3 OPGATE_SHARD_TOTAL=3
shard_env_error "JOB_COMPLETION_INDEX=-1 OPGATE_SHARD_TOTAL=3: expected integers" JOB_COMPLETION_INDEX=-1 OPGATE_SHARD_TOTAL=3
shard_env_error "JOB_COMPLETION_INDEX=0 OPGATE_SHARD_TOTAL=x: expected integers" JOB_COMPLETION_INDEX=0 OPGATE_SHARD_TOTAL=x
shard_env_error "OPGATE_SHARD_TOTAL=3 is set but JOB_COMPLETION_INDEX is not" OPGATE_SHARD_TOTAL=3
shard_env_error "OPGATE_SHARD=3/3: expected i/N with 0 <= i < N" OPGATE_SHARD=3/3
shard_env_error "OPGATE_SHARD=1: expected i/N" OPGATE_SHARD=1
export JOB_COMPLETION_INDEX=5
expect_error 2 "JOB_COMPLETION_INDEX=5 --shard-total=3: expected integers with 0 <= index < total" \
  run --cases "$WORK/a.json" --shard-total 3 --out "$WORK/r_env"
unset JOB_COMPLETION_INDEX
expect_error 2 "--shard-total=3 is set but JOB_COMPLETION_INDEX is not" run --cases "$WORK/a.json" --shard-total 3 --out "$WORK/r_env"
expect_error 2 "--shard-total" run --cases "$WORK/a.json" --shard-total 0 --out "$WORK/r_env"
check "no report folder after a bad --shard-total" test ! -e "$WORK/r_env"

# --- which source wins: --shard, then OPGATE_SHARD, GitLab, Kubernetes, GTEST_*; the header names it ---
# shard_from <expected header> <VAR=value...> [-- <run args>]: the run's shard line and run.json.
shard_from() {
  local want="$1"; shift
  local -a vars=() args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do vars+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  args=("$@")
  rm -rf "$WORK/r_from"
  env "${vars[@]}" "$OPGATE" run --cases "$WORK/a.json" --out "$WORK/r_from" "${args[@]}" >"$WORK/from.txt" 2>&1
  check "header '$want' for ${vars[*]} ${args[*]}" grep -qxF "$want" "$WORK/from.txt"
  local shard="${want#shard }"; shard="${shard%% *}"
  check "run.json shard $shard for ${vars[*]} ${args[*]}" \
    python3 -c "import json,sys; sys.exit(json.load(open('$WORK/r_from/run.json'))['shard'] != '$shard')"
}
ALL_SOURCES=(OPGATE_SHARD=1/5 CI_NODE_INDEX=3 CI_NODE_TOTAL=4 JOB_COMPLETION_INDEX=2 OPGATE_SHARD_TOTAL=3
             GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=6)
shard_from "shard 0/2 from --shard 0/2" "${ALL_SOURCES[@]}" -- --shard 0/2
shard_from "shard 1/5 from OPGATE_SHARD=1/5" "${ALL_SOURCES[@]}"
shard_from "shard 2/4 from CI_NODE_INDEX=3 CI_NODE_TOTAL=4 (GitLab CI parallel, 1-based)" "${ALL_SOURCES[@]:1}"
shard_from "shard 2/3 from JOB_COMPLETION_INDEX=2 OPGATE_SHARD_TOTAL=3 (Kubernetes Indexed Job, 0-based)" \
  "${ALL_SOURCES[@]:3}"
shard_from "shard 2/7 from JOB_COMPLETION_INDEX=2 --shard-total=7 (Kubernetes Indexed Job, 0-based)" \
  "${ALL_SOURCES[@]:3}" -- --shard-total 7
shard_from "shard 0/6 from GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=6" "${ALL_SOURCES[@]:5}"
# GitLab sets CI_NODE_TOTAL=1 on every job without `parallel:`: that alone shards nothing.
env CI_NODE_TOTAL=1 "$OPGATE" run --cases "$WORK/a.json" --out "$WORK/r_total1" >"$WORK/total1.txt" 2>&1
check "CI_NODE_TOTAL=1 alone runs every case" test "$(wc -l <"$WORK/r_total1/results.jsonl")" -eq 2
check "CI_NODE_TOTAL=1 alone prints no shard line" test -z "$(grep '^shard ' "$WORK/total1.txt")"
check "an unsharded run.json has no shard" \
  python3 -c "import json,sys; sys.exit('shard' in json.load(open('$WORK/r_total1/run.json')))"
expect_error 2 "--timeout: expected a positive number of seconds, got '-1'" run --cases "$WORK/a.json" --timeout -1
check "the --timeout error is short" test "$(wc -c <"$WORK/err.txt")" -lt 200
expect_error 2 "--timeout: expected a positive number of seconds, got 'nan'" run --cases "$WORK/a.json" --timeout nan
printf '{"op": "%s", "defaults": {"bogus": 1}, "cases": [{"id": "mfrg.d.f32", "params": {"R": 2}}]}\n' "$OP" >"$WORK/defaults.json"
expect_error 2 "defaults.json: cases\[0\]: case 'mfrg.d.f32': field 'defaults.bogus': unknown key" \
  run --cases "$WORK/defaults.json" --out "$WORK/r_defaults"
check "no report folder for a bad defaults key" test ! -e "$WORK/r_defaults"
printf '{"op": "%s", "cases": [{"id": "mfrg.p.f32", "params": {"R": 2, "hidden": 1}}]}\n' "$OP" >"$WORK/param.json"
expect_error 2 "param.json: cases\[0\]: case 'mfrg.p.f32': field 'params.hidden': unknown key" run --cases "$WORK/param.json"

# --- run --generate is filtered and sharded like case files ---
"$OPGATE" run --generate 3 --size small --seed 4 --shard 0/2 --out "$WORK/g0" -q >/dev/null 2>&1
"$OPGATE" run --generate 3 --size small --seed 4 --shard 1/2 --out "$WORK/g1" -q >/dev/null 2>&1
n_ops=$("$OPGATE" list --ops | wc -l)
g0=$(wc -l <"$WORK/g0/results.jsonl"); g1=$(wc -l <"$WORK/g1/results.jsonl")
check "generated shards partition the cases" test $((g0 + g1)) -eq $((3 * n_ops))
"$OPGATE" merge "$WORK/g0" "$WORK/g1" --out "$WORK/g_merged" >/dev/null 2>&1
check "generated shards merge without overlap" test $? -eq 0
"$OPGATE" run --generate 3 --size small --seed 4 --filter '^fwb' --out "$WORK/g_fwb" -q >"$WORK/g_fwb.txt" 2>&1
check "--filter selects among generated cases" test "$(grep -vc '"op":"ffn_worker_batching"' "$WORK/g_fwb/results.jsonl")" -eq 0
check "--generate reports the draws it skipped per operator" \
  grep -qE '^generate: incre_flash_attention_v3: 3 generated case\(s\) from [0-9]+ draw\(s\)' "$WORK/g_fwb.txt"
expect_error 2 "no cases selected \(none of the [0-9]+ generated case\(s\) matches --filter 'NOMATCH'\)" \
  run --generate 3 --size small --filter NOMATCH --out "$WORK/g_none"

echo "selection tests: $passes passed, $failures failed"
[ "$failures" -eq 0 ]
