#!/usr/bin/env bash
# Behaviour check for refactorings (issue 14): runs the same selections with two opgate binaries
# and requires byte-identical reports once timings and the harness version are masked:
# results.jsonl (the "ms" and "stages_ms" objects removed), summary.txt (its "where the time went"
# line removed), junit.xml (time attributes), failed/*.json,
# report.html (its ms column), run.json, baseline.txt/json and the console output (per-case "N ms" masked).
# Usage: tests/cli/report_identity.sh <opgate before> <opgate after> <source dir> <scratch dir>
# Not a ctest: it needs a binary built from the commit before the change.
set -euo pipefail
before="$1" after="$2" src="$3" scratch="$4"
rm -rf "$scratch" && mkdir -p "$scratch"

# Scenario name, then the run arguments. Failing and rejecting selections are included so the
# failure detail (worst elements, repro lines, failed/<id>.json) is compared too.
scenarios=(
  "ci_strict|--tier ci --strict"
  "all_tiers|--tier smoke --tier ci --tier regression --tier invalid"
  "fault_fwb|--tier ci --backend fault:fwb.unstable_sort"
  "fault_ifa|--tier ci --backend fault:ifa.pse_scaled"
  "fault_mfrg|--tier smoke --tier ci --backend fault:mfrg.k_major_index"
  "fault_mffn|--tier ci --backend fault:mffn.erf_gelu"
  "golden|--tier smoke --tier regression --against golden"
  "repeat|--tier smoke --repeat 2"
  "generate|--generate 15 --seed 3 --size small"
  "no_isolate|--op mfrg --tier ci --no-isolate --backend fault:mfrg.k_major_index"
  "baseline|--tier ci --backend fault:mffn.bias2_dropped --baseline @BASE@"
)

# Masks what legitimately differs between two builds and two runs: wall times, the harness
# version and the report folder's path. Text-level, so number formatting is compared byte for byte.
normalise() {
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import os, re, sys
src, dst, folder, binary = sys.argv[1:5]
masks = [
    (re.compile(r'"ms":\{[^}]*\},'), ''),                  # results.jsonl: per-stage wall times
    (re.compile(r'\n\s*"ms": \{[^}]*\},'), ''),          # failed/<id>.json (pretty-printed)
    (re.compile(r'"stages_ms":\{[^}]*\},'), ''),           # results.jsonl: each stage's wall time
    (re.compile(r'\n\s*"stages_ms": \{[^}]*\},'), ''),   # failed/<id>.json (pretty-printed)
    (re.compile(r'^where the time went: .*\n', re.M), ''),  # summary.txt: stage totals
    (re.compile(r'<p id="stage-times">.*?</p>'), ''),        # report.html: stage totals
    (re.compile(r' time="[0-9.]+"'), ' time="T"'),           # junit.xml
    (re.compile(r' timestamp="[^"]*"'), ' timestamp="T"'),   # junit.xml: when each suite ran
    (re.compile(r'<property name="harness_version" value="[^"]*"/>'), '<property name="harness_version" value="X"/>'),
    (re.compile(r'<th>harness_version</th><td>[^<]*</td>'), '<th>harness_version</th><td>X</td>'),  # report.html
    (re.compile(r'"harness_version": ?"[^"]*"'), '"harness_version":"X"'),
    (re.compile(r'harness_version&quot;:&quot;[^&]*&quot;'), 'harness_version:X'),  # report.html
    (re.compile(r'<td>[0-9]+\.[0-9]</td></tr>'), '<td>T</td></tr>'),             # report.html ms
    (re.compile(r'<td data-key="[-+.e0-9]+">[0-9]+\.[0-9]</td></tr>'), '<td>T</td></tr>'),  # sortable ms
]
for root, _, files in os.walk(src):
    for name in files:
        if name == 'run.lock':
            continue  # the lock holder's pid and start time
        path = os.path.join(root, name)
        # The repro lines name the binary that ran by its absolute path.
        text = open(path, encoding='utf-8').read().replace(folder, 'OUT').replace(binary, 'OPGATE')
        for pattern, repl in masks:
            text = pattern.sub(repl, text)
        out = os.path.join(dst, os.path.relpath(path, src))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        open(out, 'w', encoding='utf-8').write(text)
PY
}

# The baseline scenario judges both binaries against one baseline accepted by the old binary.
"$before" run --tier ci --out "$scratch/base_run" --root "$src" --quiet >/dev/null 2>&1 || true
"$before" baseline accept "$scratch/base_run" --to "$scratch/base" >/dev/null 2>&1

status=0
for entry in "${scenarios[@]}"; do
  name="${entry%%|*}"
  args="${entry#*|}"
  args="${args//@BASE@/$scratch/base}"
  for side in before after; do
    bin="$before"
    [ "$side" = after ] && bin="$after"
    # shellcheck disable=SC2086  # the scenario's arguments are split on purpose
    set +e
    "$bin" run $args --root "$src" --out "$scratch/$side/$name" >"$scratch/$side.$name.out" 2>"$scratch/$side.$name.err"
    echo "exit $?" >>"$scratch/$side.$name.out"
    set -e
    mkdir -p "$scratch/norm.$side/$name"
    normalise "$scratch/$side/$name" "$scratch/norm.$side/$name" "$scratch/$side/$name" "$bin"
    sed -E -i 's/ +[0-9]+\.[0-9] ms / T ms /; s#'"$scratch/$side"'#OUT#g; s#'"$bin"'#OPGATE#g' "$scratch/$side.$name.out" "$scratch/$side.$name.err"
    cp "$scratch/$side.$name.out" "$scratch/norm.$side/$name/console.out"
    cp "$scratch/$side.$name.err" "$scratch/norm.$side/$name/console.err"
  done
  if diff -r "$scratch/norm.before/$name" "$scratch/norm.after/$name" >"$scratch/$name.diff"; then
    echo "identical: $name ($(cat "$scratch/norm.after/$name/results.jsonl" | wc -l) results)"
  else
    echo "DIFFERENT: $name (see $scratch/$name.diff)"
    head -20 "$scratch/$name.diff" | cut -c1-400
    status=1
  fi
done
exit $status
