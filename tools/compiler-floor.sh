#!/usr/bin/env bash
# The oldest compilers Debian 12 ships, warnings as errors: configures build/gcc11 (g++-11) and
# build/clang13 (clang++-13) without presets (the README's plain configure path) and builds every
# target (opgate, tests, fuzz targets in their replay form, benchmarks, the stand-in CANN). A build,
# not the suite: tools/test.sh runs the tests with the default compiler. Called by .ci/run.
# Usage: tools/compiler-floor.sh [gcc11|clang13]...   (default: both)
# Exit code: 0 every build passed, 1 a configure or build failed (its log's tail is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
jobs="${OPGATE_JOBS:-$(nproc)}"
legs=("$@")
[ ${#legs[@]} -gt 0 ] || legs=(gcc11 clang13)

tools/setup.sh --install-only floor

mkdir -p build
status=0
for leg in "${legs[@]}"; do
  case "$leg" in
    gcc11) cxx=g++-11 ;;
    clang13) cxx=clang++-13 ;;
    *) echo "compiler-floor: unknown leg '$leg' (gcc11, clang13)" >&2; exit 2 ;;
  esac
  dir="build/$leg"
  start=$SECONDS
  if ! cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
         -DOPGATE_WERROR=ON -DOPGATE_BUILD_TESTS=ON -DOPGATE_BUILD_BENCH=ON -DOPGATE_BUILD_FUZZERS=ON \
         >"$dir.configure.log" 2>&1; then
    tail -40 "$dir.configure.log" >&2
    echo "compiler-floor: $leg ($cxx): configure failed (log: $dir.configure.log)" >&2
    status=1
    continue
  fi
  if ! cmake --build "$dir" -j "$jobs" >"$dir.build.log" 2>&1; then
    grep -E "error|warning" "$dir.build.log" | head -40 >&2 || true
    tail -20 "$dir.build.log" >&2
    echo "compiler-floor: $leg ($cxx): build failed (log: $dir.build.log)" >&2
    status=1
    continue
  fi
  echo "compiler-floor: $leg ($("$cxx" --version | head -1)): every target built with -Werror in $((SECONDS - start)) s"
done
exit $status
