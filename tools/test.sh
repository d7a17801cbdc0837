#!/usr/bin/env bash
# Builds opgate and runs the whole test suite with ctest (labels: unit, property, cases, golden,
# cli). Extra arguments go to ctest (e.g. -L unit, -R Props).
set -euo pipefail
cd "$(dirname "$0")/.."
for arg in "$@"; do
  case "$arg" in
    -h|--help)  # help never builds
      cat <<'TEXT'
Usage: tools/test.sh [ctest options...]

Installs the missing Debian packages (runtime and test lists), configures build/release/ with the
tests, fuzz targets (replay form) and benchmarks on (tools/setup.sh release; a folder the gate
configured gains them) and builds everything, then runs the test suite:
`ctest --preset release [ctest options...]`. Examples:
  tools/test.sh                 # everything
  tools/test.sh -L unit         # one label: unit, property, cases, golden, cli, robustness, ascend,
                                # fuzz-regression, fuzz-planted, mutation, scaffold, browser
  tools/test.sh -R selection    # tests whose name matches
  tools/test.sh -j 2            # two tests at a time
Exit code: ctest's (0 when every selected test passed).
TEXT
      exit 0 ;;
  esac
done
tools/setup.sh release
ctest --preset release "$@"
