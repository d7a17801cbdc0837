#!/usr/bin/env bash
# The nightly gate: runs the ci tier of every operator on the default backend (emu) and writes the
# reports (summary.txt, results.jsonl, junit.xml) under reports/. Extra arguments go to `opgate run`
# (e.g. --backend ascend, --tier nightly, --shard 0/4, --repeat 3).
# Exit code: 0 nothing failed, 1 a case failed, 2 usage or harness error.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh release
# The ci tier unless the arguments choose cases themselves (--tier, --cases or --generate).
default_tier=(--tier ci)
for arg in "$@"; do
  case "$arg" in --tier|--tier=*|--cases|--cases=*|--generate|--generate=*) default_tier=() ;; esac
done
exec build/release/opgate run "${default_tier[@]}" "$@"
