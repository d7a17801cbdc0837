#!/usr/bin/env bash
# tools/setup.sh's package step (label unit), on a scratch copy of the script with a PATH of fakes:
# - Debian (fake dpkg-query reporting a chosen set installed, fake apt-get and sudo recording their
#   arguments, fake cmake recording its calls): the gate preset installs exactly the missing runtime
#   packages and no test-only one, then configures the gate preset and builds target opgate (gate
#   build preset); release installs the missing runtime and test packages; nothing missing: no apt-get.
# - A dnf host, a yum host and a host with neither (no apt-get, no dpkg-query on PATH): exit 2,
#   naming the host family's packages for the preset, before any cmake call; OPGATE_NO_INSTALL=1
#   there skips the package step and configures and builds.
# Usage: setup_test.sh <source dir> <scratch dir>
set -euo pipefail
src="$1"
scratch="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$scratch"
mkdir -p "$scratch/tree/tools" "$scratch/bin" "$scratch/log"
cp "$src/tools/setup.sh" "$scratch/tree/tools/setup.sh"
bin="$scratch/bin" log="$scratch/log"
# The real commands the script uses, and nothing else: no apt-get, dpkg-query, dnf, yum or cmake.
for c in bash dirname id nproc grep tr cat; do
  ln -s "$(command -v "$c")" "$bin/$c"
done
fake() {  # fake <name> <body>: a script on the fake PATH
  printf '#!%s\n%s\n' "$(command -v bash)" "$2" >"$bin/$1"
  chmod +x "$bin/$1"
}
fake cmake "echo \"\$*\" >>'$log/cmake'"
fake sudo 'exec "$@"'

run_setup() {  # run_setup <preset...>: runs the copy; sets rc, out
  rm -f "$log"/*
  rc=0
  out=$(env -i PATH="$bin" HOME="$scratch" "$bin/bash" "$scratch/tree/tools/setup.sh" "$@" 2>&1) || rc=$?
}
contains() { grep -qF -- "$1" <<<"$out" || fail "setup.sh $2: output lacks '$1': $out"; }

runtime=(cmake ninja-build g++ pkg-config nlohmann-json3-dev libfmt-dev libcli11-dev libssl-dev libsqlite3-dev
         libxxhash-dev)
test_only=(libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev libopenblas-dev chromium libxml2-utils ccache
           python3 python3-numpy gcovr clang)

# ---- Debian: the installed set is read from $scratch/installed, one package a line ----
# A line "pkg" is pkg installed for amd64 (the fake dpkg's architecture), "pkg:arm64" a foreign copy.
fake dpkg 'echo amd64'
fake dpkg-query "p=\"\${@: -1}\"; grep -qx -- \"\$p\" '$scratch/installed' && printf 'install ok installed amd64\\n';
grep -qx -- \"\$p:arm64\" '$scratch/installed' && printf 'install ok installed arm64\\n'; exit 0"
fake apt-get "echo \"\$*\" >>'$log/apt-get'"

# Nothing installed: the gate installs the runtime list, nothing test-only.
: >"$scratch/installed"
run_setup gate
[ "$rc" = 0 ] || fail "setup.sh gate exited $rc: $out"
install_line=$(grep '^install' "$log/apt-get") || fail "setup.sh gate did not call apt-get install: $out"
for p in "${runtime[@]}"; do
  grep -qw -- "$p" <<<"$install_line" || fail "setup.sh gate does not install $p: $install_line"
done
for p in "${test_only[@]}"; do
  ! grep -qw -- "$p" <<<"$install_line" || fail "setup.sh gate installs the test-only $p: $install_line"
done
grep -qx -- "--preset gate" "$log/cmake" || fail "setup.sh gate did not configure the gate preset: $(cat "$log/cmake")"
grep -q -- "--build --preset gate" "$log/cmake" || fail "setup.sh gate did not build the gate preset: $(cat "$log/cmake")"
grep -q '"targets": \["opgate"\]' <(grep '"name": "gate", "configurePreset"' "$src/CMakePresets.json") ||
  fail "the gate build preset does not build target opgate alone (CMakePresets.json)"

# An existing build/release keeps its settings: the gate builds without configuring.
mkdir -p "$scratch/tree/build/release" && : >"$scratch/tree/build/release/build.ninja"
run_setup gate
[ "$rc" = 0 ] || fail "setup.sh gate (configured folder) exited $rc: $out"
! grep -q -- "^--preset" "$log/cmake" || fail "setup.sh gate reconfigured an existing build/release: $(cat "$log/cmake")"
grep -q -- "--build --preset gate" "$log/cmake" || fail "setup.sh gate did not build: $(cat "$log/cmake")"
rm -rf "$scratch/tree/build"

# A runtime package installed only for arm64 (the aarch64 cross preset's copy) is still missing.
printf '%s:arm64\n' "${runtime[@]}" >"$scratch/installed"
run_setup gate
[ "$rc" = 0 ] || fail "setup.sh gate (arm64 copies) exited $rc: $out"
install_line=$(grep '^install' "$log/apt-get") || fail "setup.sh gate took :arm64 copies for installed: $out"
grep -qw -- libfmt-dev <<<"$install_line" || fail "setup.sh gate took libfmt-dev:arm64 for installed: $install_line"

# Release: runtime and test packages; only the missing ones.
printf '%s\n' "${runtime[@]}" >"$scratch/installed"
run_setup release
[ "$rc" = 0 ] || fail "setup.sh release exited $rc: $out"
install_line=$(grep '^install' "$log/apt-get") || fail "setup.sh release did not call apt-get install: $out"
for p in libgtest-dev librapidcheck-dev chromium libxml2-utils; do
  grep -qw -- "$p" <<<"$install_line" || fail "setup.sh release does not install $p: $install_line"
done
! grep -qw -- "libfmt-dev" <<<"$install_line" || fail "setup.sh release reinstalls an installed package: $install_line"

# Everything installed: no apt-get at all.
printf '%s\n' "${runtime[@]}" >"$scratch/installed"
run_setup gate
[ "$rc" = 0 ] && [ ! -e "$log/apt-get" ] || fail "setup.sh gate with everything installed ran apt-get (rc $rc): $out"

# An unknown preset: exit 2 before anything.
run_setup nosuch
[ "$rc" = 2 ] && [ ! -e "$log/cmake" ] || fail "setup.sh nosuch exited $rc (wanted 2, no cmake): $out"

# ---- no apt: dnf, yum, neither ----
rm "$bin/dpkg-query" "$bin/apt-get"
fake dnf "echo \"\$*\" >>'$log/dnf'"
run_setup gate
[ "$rc" = 2 ] || fail "setup.sh gate on a dnf host exited $rc, not 2: $out"
[ ! -e "$log/cmake" ] && [ ! -e "$log/dnf" ] || fail "setup.sh on a dnf host ran cmake or dnf: $out"
contains "sudo dnf install" "gate (dnf)"
for p in gcc-c++ cmake ninja-build pkgconf json-devel fmt-devel cli11-devel openssl-devel sqlite-devel xxhash-devel; do
  contains "$p" "gate (dnf)"
done
! grep -q "gtest-devel" <<<"$out" || fail "setup.sh gate (dnf) names the test-only gtest-devel: $out"
contains "OPGATE_NO_INSTALL=1" "gate (dnf)"
run_setup release
[ "$rc" = 2 ] || fail "setup.sh release on a dnf host exited $rc, not 2: $out"
for p in gtest-devel rapidcheck-devel google-benchmark-devel xxhash-devel; do contains "$p" "release (dnf)"; done

rm "$bin/dnf"
fake yum "echo \"\$*\" >>'$log/yum'"
run_setup gate
[ "$rc" = 2 ] && [ ! -e "$log/cmake" ] || fail "setup.sh gate on a yum host exited $rc (wanted 2, no cmake): $out"
contains "sudo yum install" "gate (yum)"

rm "$bin/yum"
run_setup gate
[ "$rc" = 2 ] && [ ! -e "$log/cmake" ] || fail "setup.sh gate without any package tool exited $rc (wanted 2): $out"
contains "libxxhash-dev" "gate (no package tool)"
contains "xxhash-devel" "gate (no package tool)"

# Packages installed by other means: OPGATE_NO_INSTALL=1 goes straight to configure and build.
rm -f "$log"/*
rc=0
out=$(env -i PATH="$bin" HOME="$scratch" OPGATE_NO_INSTALL=1 "$bin/bash" "$scratch/tree/tools/setup.sh" gate 2>&1) || rc=$?
[ "$rc" = 0 ] || fail "OPGATE_NO_INSTALL=1 setup.sh gate exited $rc: $out"
grep -q -- "--build --preset gate" "$log/cmake" || fail "OPGATE_NO_INSTALL=1 setup.sh gate did not build: $out"
echo "setup: gate installs the runtime list only; dnf, yum and bare hosts get the package names and exit 2"
