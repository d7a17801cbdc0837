#!/usr/bin/env bash
# The aarch64 (Kunpeng) CI leg: installs and cross-builds the aarch64 preset (tools/setup.sh
# aarch64), then runs under qemu-aarch64: the unit tests (core, cases, harness, tools, history, every
# operator's reference/layout/emulator tests, shared_math_tests' cross-path and thread-count bit
# identity, the fp-contract check), the ci tier of every operator, `golden verify` of the checked-in
# goldens (written on x86-64: bit for bit) and the stand-in CANN tests (label ascend). Prints each
# part's time; runs every part even after a failure, and exits 1 naming the failed parts.
# qemu-user computes about 30x slower than native, which is why the property, nightly, cli and
# scaffold tests stay on the native legs. Extra arguments go to every ctest call (e.g. -j 1).
set -euo pipefail
cd "$(dirname "$0")/.."
report=()
failed=()
part() {  # part <name> <command...>
  local name="$1" t0=$SECONDS rc=0
  shift
  echo "== aarch64 leg: $name"
  "$@" || rc=$?
  local took=$((SECONDS - t0))
  if [ "$rc" -eq 0 ]; then
    report+=("$(printf '%-8s %5d s  ok' "$name" "$took")")
  else
    report+=("$(printf '%-8s %5d s  FAILED (exit %d)' "$name" "$took" "$rc")")
    failed+=("$name")
  fi
}
# The build must give aarch64 binaries, or every later part would test the wrong thing.
build() {
  tools/setup.sh aarch64 || { echo "aarch64 leg: tools/setup.sh aarch64 failed" >&2; return 1; }
  aarch64-linux-gnu-readelf -h build/aarch64/opgate | grep -q 'Machine: *AArch64' ||
    { echo "aarch64 leg: build/aarch64/opgate is not an AArch64 binary" >&2; return 1; }
  build/aarch64/emulated/opgate --version  # the architecture and the vector paths under test
}
leg_t0=$SECONDS
part build build
if [ ${#failed[@]} -eq 0 ]; then
  part unit ctest --preset aarch64 -L unit "$@"
  part ci ctest --preset aarch64 -R '^cases\..*\.ci$' "$@"
  part golden ctest --preset aarch64 -L golden "$@"
  part ascend ctest --preset aarch64 -L ascend "$@"
fi
echo "== aarch64 leg: times (qemu-user for everything after the build)"
printf '  %s\n' "${report[@]}"
echo "  total    $((SECONDS - leg_t0)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "aarch64 leg FAILED: ${failed[*]} (the ctest output above names the failing tests)" >&2
  exit 1
fi
