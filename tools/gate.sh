#!/usr/bin/env bash
# The nightly gate: runs the ci tier of every operator on the default backend (emu) and writes the
# reports (summary.txt, results.jsonl, junit.xml, report.html) under reports/. Extra arguments go to
# `opgate run` (e.g. --backend ascend, --tier nightly, --shard 0/4, --repeat 3, --baseline DIR);
# relative paths in them are relative to where the gate is started.
# Exit code: 0 nothing failed, 1 a case failed, 2 usage or harness error (a failed build included).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() {
  cat <<'TEXT'
Usage: tools/gate.sh [opgate run options...]

The gate: installs the missing Debian packages the opgate binary needs (no test-only ones),
configures build/release/ unless it is configured already, and builds only opgate there
(tools/setup.sh gate); then runs `build/release/opgate run --tier ci` over every operator on the
emu backend and writes the reports under reports/. Arguments go to `opgate run`; with --tier, --cases or --generate
they choose the cases instead of the ci tier. Examples:
  tools/gate.sh --backend ascend --repeat 3
  tools/gate.sh --tier nightly --shard 0/4 --out reports/shard0
Exit code: 0 nothing failed, 1 a case failed, 2 usage or harness error (a failed build included).
TEXT
}
# Help never builds: it prints this, and the run options when a build already has opgate.
for arg in "$@"; do
  case "$arg" in
    -h|--help)
      usage
      if [ -x "$root/build/release/opgate" ]; then
        printf '\n'
        "$root/build/release/opgate" run --help
      else
        printf '\n`opgate run --help` lists the run options once tools/gate.sh or tools/setup.sh gate has built it.\n'
      fi
      exit 0 ;;
  esac
done
# Set-up output goes to stderr so the gate's own output stays clean. Only what opgate needs is
# installed and built (the gate preset: no tests, fuzz targets, benchmarks or stand-in CANN).
"$root/tools/setup.sh" gate >&2 || exit 2
# The ci tier unless the arguments choose cases themselves (--tier, --cases or --generate).
default_tier=(--tier ci)
for arg in "$@"; do
  case "$arg" in --tier|--tier=*|--cases|--cases=*|--generate|--generate=*) default_tier=() ;; esac
done
exec "$root/build/release/opgate" run "${default_tier[@]}" "$@"
