#!/usr/bin/env bash
# The nightly gate: runs the ci tier of every operator on the default backend (emu) and writes the
# reports (summary.txt, results.jsonl, junit.xml, report.html) under reports/. Extra arguments go to
# `opgate run` (e.g. --backend ascend, --tier nightly, --shard 0/4, --repeat 3, --baseline DIR);
# relative paths in them are relative to where the gate is started.
# Exit code: 0 nothing failed, 1 a case failed, 2 usage or harness error (a failed build included).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# Set-up output goes to stderr so the gate's own output stays clean.
"$root/tools/setup.sh" release >&2 || exit 2
# The ci tier unless the arguments choose cases themselves (--tier, --cases or --generate).
default_tier=(--tier ci)
for arg in "$@"; do
  case "$arg" in --tier|--tier=*|--cases|--cases=*|--generate|--generate=*) default_tier=() ;; esac
done
exec "$root/build/release/opgate" run "${default_tier[@]}" "$@"
