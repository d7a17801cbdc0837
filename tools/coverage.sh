#!/usr/bin/env bash
# Line and branch coverage of device/emu/ and reference/ under the gate: builds the `coverage`
# preset (gcc --coverage, -O0, build/coverage/), runs the ci and invalid tiers of every operator
# on emu and the unit tests (ctest -L unit), then gcovr writes, in build/coverage/coverage/:
#   summary.txt   per file: lines and branches covered, and the uncovered line numbers
#   branches.txt  per file: branch coverage with the lines holding untaken branches
#   index.html    the HTML report (one page per file, lines and branches marked)
# Usage: tools/coverage.sh [--no-build]
# Exit code: 0 report written (failing cases are listed but do not stop the report); 1 line coverage
# below OPGATE_MIN_LINE_COVERAGE percent (when set) or a run failed; 2 set-up error.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build=build/coverage
out=$build/coverage
[ "${1:-}" = --no-build ] || tools/setup.sh coverage >&2 || exit 2
command -v gcovr >/dev/null || { echo "coverage: gcovr is not installed (tools/setup.sh coverage installs it)" >&2; exit 2; }

# Fresh counters: every .gcda from an earlier run would add to this one.
find "$build" -name '*.gcda' -delete
rm -rf "$out" "$build/coverage_runs"
mkdir -p "$out"

start=$(date +%s)
failed=()
for dir in cases/*/; do
  op=$(basename "$dir")
  [ -f "device/emu/$op.cpp" ] || continue
  for tier in ci invalid; do
    [ -f "cases/$op/$tier.json" ] || continue
    # --no-isolate: an isolated case ends its child with _exit(), which skips writing the counters.
    if ! "$build/opgate" run --cases "cases/$op/$tier.json" --backend emu --root "$root" --no-isolate --quiet \
         --out "$build/coverage_runs/$op.$tier" --overwrite > "$build/coverage_runs.$op.$tier.log" 2>&1; then
      failed+=("$op.$tier (see $build/coverage_runs.$op.$tier.log)")
    fi
    echo "coverage: $op $tier: $(tail -2 "$build/coverage_runs.$op.$tier.log" | head -1)"
  done
done
ctest --test-dir "$build" -L unit -j 2 --output-on-failure > "$build/coverage_unit.log" 2>&1 ||
  failed+=("unit tests (see $build/coverage_unit.log)")
echo "coverage: unit tests: $(grep -E 'tests passed|tests failed' "$build/coverage_unit.log" | tail -1)"
echo "coverage: runs took $(( $(date +%s) - start )) s"

# Exception-only and compiler-unreachable branches are not the code's decisions.
filters=(--root "$root" --object-directory "$build" --filter 'device/emu/' --filter 'reference/'
         --exclude-throw-branches --exclude-unreachable-branches)
gcovr "${filters[@]}" --txt "$out/summary.txt" --html-details "$out/index.html" --print-summary \
  > "$out/totals.txt"
gcovr "${filters[@]}" --txt "$out/branches.txt" --branches
cat "$out/summary.txt"
echo
cat "$out/totals.txt"
echo "coverage: report $out/index.html, per-file text $out/summary.txt and $out/branches.txt"
status=0
if [ ${#failed[@]} -gt 0 ]; then
  printf 'coverage: FAILED during the runs: %s\n' "${failed[@]}"
  status=1
fi
lines=$(sed -n 's/^lines: \([0-9.]*\)%.*/\1/p' "$out/totals.txt")
if [ -n "${OPGATE_MIN_LINE_COVERAGE:-}" ] &&
   awk -v got="$lines" -v min="$OPGATE_MIN_LINE_COVERAGE" 'BEGIN { exit !(got < min) }'; then
  echo "coverage: line coverage $lines% is below OPGATE_MIN_LINE_COVERAGE=$OPGATE_MIN_LINE_COVERAGE%"
  status=1
fi
exit $status
