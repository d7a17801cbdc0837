#!/usr/bin/env bash
# Replays a fuzz target over the folders that exist among its arguments (its seed corpus and its
# regressions), for ctest label fuzz-regression; the same flags serve libFuzzer and the standalone
# driver. Usage: replay.sh <target binary> <folder>...
set -euo pipefail
target="$1"; shift
dirs=()
for d in "$@"; do
  if [ -d "$d" ]; then dirs+=("$d"); fi
done
exec "$target" -runs=0 -max_len=1048576 "${dirs[@]}"
