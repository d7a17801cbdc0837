# The declared compiler floor (README, "Supported hosts and compilers"): GCC >= 9 or Clang >= 10,
# with a C++ standard library that has <filesystem> (libstdc++ >= 9 links it without -lstdc++fs; an
# older one that needs -lstdc++fs gets it). Below the floor the configure step stops here with what
# to do, instead of failing later on <filesystem> or a C++17 library gap.
#
# Checked by CI: tools/compiler-floor.sh builds everything with g++-11 and clang++-13 (the oldest
# Debian 12 ships) with -Werror; tests/tools/compiler_floor_test.sh configures with a compiler that
# identifies as GCC 7.3 / 8.5 / Clang 9 and expects this error, and runs the check in script mode:
#   cmake -DOPGATE_FLOOR_ID=GNU -DOPGATE_FLOOR_VERSION=7.3.0 -P cmake/opgate_toolchain.cmake
set(OPGATE_GCC_FLOOR 9)
set(OPGATE_CLANG_FLOOR 10)

# Fails the configure step when compiler `id` at `version` is below the floor.
function(opgate_check_compiler_floor id version path)
  if(id STREQUAL "GNU")
    set(_name GCC)
    set(_floor ${OPGATE_GCC_FLOOR})
  elseif(id STREQUAL "Clang")
    set(_name Clang)
    set(_floor ${OPGATE_CLANG_FLOOR})
  else()
    message(WARNING "opgate: compiler ${id} ${version} (${path}) is not one opgate is built with "
                    "(GCC >= ${OPGATE_GCC_FLOOR}, Clang >= ${OPGATE_CLANG_FLOOR}); continuing untested")
    return()
  endif()
  if(version VERSION_LESS ${_floor})
    message(FATAL_ERROR
      "opgate needs GCC >= ${OPGATE_GCC_FLOOR} or Clang >= ${OPGATE_CLANG_FLOOR} (C++17 with <filesystem>); "
      "found ${_name} ${version} (${path}).\n"
      "On a host whose system compiler is older (GCC 7.3 on Kylin V10, EulerOS 2.8 and UOS 1020e; "
      "GCC 8 on CentOS 8), install a newer toolset and configure a new build folder with it, e.g.\n"
      "  sudo dnf install gcc-toolset-12-gcc-c++   # devtoolset-11-gcc-c++ on CentOS 7 (yum)\n"
      "  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=<its g++>\n"
      "where <its g++> is e.g. /opt/rh/gcc-toolset-12/root/usr/bin/g++ (openEuler: "
      "/opt/openEuler/gcc-toolset-12/root/usr/bin/g++).\n"
      "(README: \"Supported hosts and compilers\"). A build folder remembers its compiler: "
      "remove it or pick a new one.")
  endif()
endfunction()

# std::filesystem: in libstdc++ itself from GCC 9; libstdc++ 8 (and clang on top of it) keeps it
# in libstdc++fs. Links that library into `target` (PUBLIC) only when a program needs it.
function(opgate_link_filesystem target)
  include(CheckCXXSourceCompiles)
  set(_src "#include <filesystem>\nint main() { return std::filesystem::current_path().empty() ? 1 : 0; }\n")
  set(CMAKE_REQUIRED_QUIET ON)
  check_cxx_source_compiles("${_src}" OPGATE_FILESYSTEM_PLAIN)
  if(OPGATE_FILESYSTEM_PLAIN)
    return()
  endif()
  set(CMAKE_REQUIRED_LIBRARIES stdc++fs)
  check_cxx_source_compiles("${_src}" OPGATE_FILESYSTEM_STDCXXFS)
  if(NOT OPGATE_FILESYSTEM_STDCXXFS)
    message(FATAL_ERROR "opgate: ${CMAKE_CXX_COMPILER} cannot build a std::filesystem program, with or "
                        "without -lstdc++fs; use GCC >= ${OPGATE_GCC_FLOOR} (README, \"Supported hosts and compilers\")")
  endif()
  message(STATUS "opgate: std::filesystem needs -lstdc++fs with this standard library")
  target_link_libraries(${target} PUBLIC stdc++fs)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  opgate_check_compiler_floor("${OPGATE_FLOOR_ID}" "${OPGATE_FLOOR_VERSION}" "script mode")
elseif(CMAKE_CXX_COMPILER_ID)
  opgate_check_compiler_floor("${CMAKE_CXX_COMPILER_ID}" "${CMAKE_CXX_COMPILER_VERSION}" "${CMAKE_CXX_COMPILER}")
endif()
