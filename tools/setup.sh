#!/usr/bin/env bash
# Installs what opgate needs on Debian 12 (only what is missing), then configures and builds.
# Usage: tools/setup.sh [preset]   (preset: release (default), debug, asan, fuzz, coverage)
# The fuzz preset (clang, libFuzzer, ASan + UBSan) builds only opgate and the fuzz targets; the
# coverage preset (gcc --coverage, for tools/coverage.sh) also installs gcovr.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
# aarch64: the cross preset (arm64 multiarch packages, cross compiler, qemu-user) has its own list.
if [ "$preset" = aarch64 ]; then exec tools/setup-aarch64.sh; fi

packages=(cmake ninja-build g++ pkg-config libgtest-dev libgmock-dev librapidcheck-dev nlohmann-json3-dev
          libfmt-dev libcli11-dev libssl-dev libsqlite3-dev libbenchmark-dev python3 ccache procps
          libxxhash-dev    # XXH3 digests of the inputs the device must leave unchanged (core/guard.h)
          libopenblas-dev  # the dgemm peer of bench/ only (never linked into opgate)
          chromium         # the browser test of report.html (ctest -L browser)
          libxml2-utils)   # xmllint: junit.xml against the JUnit schema (cli.junit_test)
if [ "$preset" = asan ] || [ "$preset" = fuzz ] || [ "${OPGATE_WITH_CLANG:-0}" = 1 ]; then
  packages+=(clang libclang-rt-14-dev)
fi
if [ "$preset" = coverage ]; then
  packages+=(gcovr)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "opgate setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
