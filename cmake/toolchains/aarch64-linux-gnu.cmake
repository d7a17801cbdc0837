# Cross build for aarch64 Linux (Kunpeng hosts) with Debian's g++-aarch64-linux-gnu against the
# multiarch :arm64 packages (dpkg --add-architecture arm64; tools/setup.sh aarch64 installs both).
# Test binaries run under qemu-user: ctest and gtest_discover_tests prefix them with the emulator.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(_triplet aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${_triplet}-gcc)
set(CMAKE_CXX_COMPILER ${_triplet}-g++)
# Debian multiarch: the sysroot is /, the :arm64 libraries and CMake packages live under
# /usr/lib/aarch64-linux-gnu (searched through CMAKE_LIBRARY_ARCHITECTURE), arch-independent
# packages (nlohmann-json, CLI11) under /usr/share.
set(CMAKE_LIBRARY_ARCHITECTURE ${_triplet})
# Never pick up a host (x86-64) library or CMake package by accident: it would only fail at link.
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/cmake)
# pkg-config (libxxhash) reads only the arm64 and arch-independent .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${_triplet}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# Programs (python3, bash, the host's cmake tools) come from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# -L /: the binaries run on the multiarch arm64 loader, libc and libstdc++ (libc6:arm64,
# libstdc++6:arm64), the same that their :arm64 libraries were built against. Not -L /usr/aarch64-linux-gnu
# (the cross toolchain's own libc6-arm64-cross): with that libc qemu-user 7.2 hangs in the first
# pthread_create (seen here: a one-thread program never ran its thread), and every parallel_for and
# test that starts a thread would hang with it.
find_program(OPGATE_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(NOT OPGATE_QEMU_AARCH64)
  # Without it every test command would start with "-L" (seen in CI: "Error running test executable").
  message(FATAL_ERROR "aarch64 cross build: qemu-aarch64 not found; install qemu-user (tools/setup.sh aarch64 does)")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${OPGATE_QEMU_AARCH64} -L /)
