#!/usr/bin/env bash
# Installs what a preset needs on Debian 12 / Ubuntu (only what is missing), then configures and builds.
# Usage: tools/setup.sh [--install-only] [preset]
#   gate      the opgate binary only (tools/gate.sh): the runtime list; builds target opgate in
#             build/release (an existing build/release keeps its settings, tests included)
#   release   (default) everything in build/release: runtime + test lists (tools/test.sh)
#   debug     the same in build/debug
#   asan      clang ASan + UBSan in build/asan: runtime + test + clang lists
#   fuzz      libFuzzer targets (clang, ASan + UBSan) in build/fuzz: builds opgate and the fuzz targets
#   coverage  gcc --coverage in build/coverage (tools/coverage.sh): runtime + test + coverage lists
#   floor     install only: runtime + test + g++-11 and clang-13 (tools/compiler-floor.sh)
# --install-only: install the preset's packages, configure and build nothing.
# OPGATE_NO_INSTALL=1: install nothing (packages installed by other means), configure and build.
# OPGATE_JOBS: parallel build jobs (default: the cores).
# On a host without apt-get and dpkg-query (openEuler, Kylin, EulerOS, UOS, CentOS: dnf or yum) it
# prints the packages that host family needs and exits 2 (tests/tools/setup_test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

install_only=0
if [ "${1:-}" = "--install-only" ]; then
  install_only=1
  shift
fi
preset="${1:-release}"
# aarch64: the cross preset (arm64 multiarch packages, cross compiler, qemu-user) has its own list.
if [ "$preset" = aarch64 ]; then exec tools/setup-aarch64.sh; fi

# ---- package lists, one per purpose (Debian names) ------------------------------------------------
# runtime: what configuring and building the opgate binary needs, and nothing else.
deb_runtime=(cmake ninja-build g++ pkg-config nlohmann-json3-dev libfmt-dev libcli11-dev libssl-dev
             libsqlite3-dev   # the run history (history/)
             libxxhash-dev)   # XXH3 digests of the inputs the device must leave unchanged (core/guard.h)
# test: the suites, benchmarks and test tools (tools/test.sh).
deb_test=(libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev python3 procps
          ccache           # serves the main build's objects to tests/scaffold/scaffold_test.sh's copy
          libopenblas-dev  # the dgemm peer of bench/ only (never linked into opgate)
          chromium         # the browser test of report.html (ctest -L browser)
          libxml2-utils    # xmllint: junit.xml against the JUnit schema (cli.junit_test)
          python3-numpy)   # loads tensor dumps the way a user would (cli.dump_test)
# clang: sanitizers and libFuzzer (asan, fuzz; OPGATE_WITH_CLANG=1 adds it to any preset).
deb_clang=(clang libclang-rt-14-dev)
deb_coverage=(gcovr)
# floor: the oldest compilers Debian 12 ships (tools/compiler-floor.sh).
deb_floor=(g++-11 clang-13)

# The same lists under the usual names of the dnf/yum families (Fedora, openEuler, and the
# RHEL-style distributions built on them); some (cli11-devel, rapidcheck-devel, chromium) come from
# EPEL or an extra repository there, or must be built.
rpm_runtime=(cmake ninja-build gcc-c++ pkgconf json-devel fmt-devel cli11-devel openssl-devel
             sqlite-devel xxhash-devel)
rpm_test=(gtest-devel gmock-devel rapidcheck-devel google-benchmark-devel python3 procps-ng ccache
          openblas-devel chromium libxml2 python3-numpy)
rpm_clang=(clang compiler-rt)
rpm_coverage=(gcovr)
rpm_floor=()

case "$preset" in
  gate)             lists=(runtime) ;;
  release|debug)    lists=(runtime test) ;;
  asan|fuzz)        lists=(runtime test clang) ;;
  coverage)         lists=(runtime test coverage) ;;
  floor)            lists=(runtime test floor); install_only=1 ;;
  *) echo "opgate setup: unknown preset '$preset' (gate, release, debug, asan, fuzz, coverage, floor)" >&2
     exit 2 ;;
esac
if [ "${OPGATE_WITH_CLANG:-0}" = 1 ] && [[ " ${lists[*]} " != *" clang "* ]]; then
  lists+=(clang)
fi

# The packages of `lists` for one family (deb or rpm).
packages_of() {
  local family="$1" list name p
  for list in "${lists[@]}"; do
    name="${family}_${list}[@]"
    for p in "${!name}"; do printf '%s\n' "$p"; done
  done
}

# ---- installing --------------------------------------------------------------------------------
if [ "${OPGATE_NO_INSTALL:-0}" = 1 ]; then
  :
elif command -v apt-get >/dev/null 2>&1 && command -v dpkg-query >/dev/null 2>&1; then
  mapfile -t packages < <(packages_of deb)
  # Installed for this host's architecture or architecture-independent: on a multiarch host an
  # :arm64 copy (tools/setup.sh aarch64's) does not count (seen: the gate then skipped libfmt-dev
  # and failed to configure).
  native="$(dpkg --print-architecture)"
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status} ${Architecture}\n' "$p" 2>/dev/null |
      grep -qE "^install ok installed ($native|all)\$" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "opgate setup: installing ${missing[*]}"
    sudo_cmd=()
    [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
else
  # No apt: name what this host family needs and stop, rather than fail on a missing command.
  tool=""
  for t in dnf yum; do
    if command -v "$t" >/dev/null 2>&1; then tool="$t"; break; fi
  done
  mapfile -t packages < <(packages_of rpm)
  {
    echo "opgate setup: this host has no apt-get/dpkg-query, so tools/setup.sh installs nothing here."
    if [ ${#packages[@]} -eq 0 ]; then
      echo "The '$preset' packages (${lists[*]}) exist under Debian names only: $(packages_of deb | tr '\n' ' ')"
    elif [ -n "$tool" ]; then
      echo "Install the '$preset' packages (${lists[*]}) with $tool (the usual names; some need EPEL or an extra repository):"
      echo "  sudo $tool install ${packages[*]}"
    else
      echo "No dnf or yum either. The '$preset' packages (${lists[*]}), by their Debian names:"
      echo "  $(packages_of deb | tr '\n' ' ')"
      echo "and their usual dnf/yum names:"
      echo "  ${packages[*]}"
    fi
    echo "The compiler must be GCC >= 9 or Clang >= 10 (README, \"Supported hosts and compilers\"; GCC 7.3 hosts: gcc-toolset)."
    echo "Then rerun with OPGATE_NO_INSTALL=1 to configure and build: OPGATE_NO_INSTALL=1 $0 $preset"
  } >&2
  exit 2
fi
[ "$install_only" = 1 ] && exit 0

# ---- configuring and building ------------------------------------------------------------------
# ccache (when installed) shares objects between trees and with tests/scaffold's copy when paths are
# relative to a base directory.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
jobs="${OPGATE_JOBS:-$(nproc)}"
if [ "$preset" = gate ] && { [ -f build/release/build.ninja ] || [ -f build/release/Makefile ]; }; then
  : # an existing build/release (tools/test.sh's, or a developer's) keeps its settings; only opgate is built
else
  cmake --preset "$preset" >/dev/null
fi
cmake --build --preset "$preset" -j "$jobs"
