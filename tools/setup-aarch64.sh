#!/usr/bin/env bash
# tools/setup.sh aarch64: installs the aarch64 cross build's Debian packages (only what is missing)
# and configures and builds build/aarch64/ (CMake preset aarch64). The host compiles with
# g++-aarch64-linux-gnu against the :arm64 multiarch packages and runs the tests under qemu-user
# (cmake/toolchains/aarch64-linux-gnu.cmake). On an aarch64 host itself use the release preset.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  echo "opgate setup aarch64: the cross preset uses Debian multiarch (dpkg, apt-get); on this host build natively" \
       "on an aarch64 machine with the release preset" >&2
  exit 2
fi
host=(cmake ninja-build pkg-config python3 ccache procps
      g++-aarch64-linux-gnu   # the cross compiler and its libc/libstdc++ (libc6-arm64-cross)
      qemu-user)              # qemu-aarch64: ctest runs the arm64 binaries through it
# The libraries opgate and its tests link, built for arm64 (nlohmann-json and CLI11 are header-only,
# architecture "all").
# libc6 and libstdc++6 :arm64 are what the binaries run on under qemu (the toolchain file's -L /).
arm64=(libc6:arm64 libstdc++6:arm64 libfmt-dev:arm64 libssl-dev:arm64 libsqlite3-dev:arm64 libxxhash-dev:arm64 libgtest-dev:arm64
       libgmock-dev:arm64 librapidcheck-dev:arm64 nlohmann-json3-dev libcli11-dev)
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
update=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "opgate setup aarch64: dpkg --add-architecture arm64"
  "${sudo_cmd[@]}" dpkg --add-architecture arm64
  update=1
fi
# A name without :arch must be installed for the host's architecture (or be architecture "all"),
# one with :arm64 for arm64; an amd64 copy never stands in for an arm64 one, nor the reverse.
native="$(dpkg --print-architecture)"
missing=()
for p in "${host[@]}" "${arm64[@]}"; do
  want="$native|all"
  [[ "$p" == *:arm64 ]] && want="arm64"
  dpkg-query -W -f='${Status} ${Architecture}\n' "$p" 2>/dev/null |
    grep -qE "^install ok installed ($want)\$" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] || [ "$update" = 1 ]; then
  "${sudo_cmd[@]}" apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "opgate setup aarch64: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake --preset aarch64 >/dev/null
cmake --build --preset aarch64 -j "$(nproc)"
