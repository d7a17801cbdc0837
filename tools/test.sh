#!/usr/bin/env bash
# Builds opgate and runs the whole test suite with ctest (labels: unit, property, cases, golden,
# cli). Extra arguments go to ctest (e.g. -L unit, -R Props).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh release
ctest --preset release "$@"
