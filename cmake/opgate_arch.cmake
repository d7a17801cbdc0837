# The target architecture, from CMAKE_SYSTEM_PROCESSOR (the toolchain file's when cross-compiling):
# OPGATE_ARCH is x86_64 or aarch64, the folder name of that architecture's ISA kernels
# (<layer>/x86_64/*.cpp, <layer>/aarch64/*.cpp, core/isa.h). OPGATE_ARCH_X86_64 / OPGATE_ARCH_AARCH64
# tell the dispatch tables which rows exist; they must agree with the files compiled, so they come
# from here and not from the compiler's own macros.
string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" _opgate_cpu)
if(_opgate_cpu MATCHES "^(x86_64|amd64|x64)$")
  set(OPGATE_ARCH x86_64)
elseif(_opgate_cpu MATCHES "^(aarch64|arm64|armv8.*)$")
  set(OPGATE_ARCH aarch64)
else()
  message(FATAL_ERROR "opgate: CMAKE_SYSTEM_PROCESSOR '${CMAKE_SYSTEM_PROCESSOR}' is not a supported architecture "
                      "(x86_64 or aarch64; README: supported hosts)")
endif()
string(TOUPPER "OPGATE_ARCH_${OPGATE_ARCH}" OPGATE_ARCH_DEFINE)
message(STATUS "opgate: architecture ${OPGATE_ARCH}")

# The sources of <dir>/<OPGATE_ARCH>/ whose names match `pattern` (a glob, e.g. "*.cpp" or
# "moe_ffn_*.cpp").
function(opgate_arch_sources out_var dir pattern)
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/${dir}/${OPGATE_ARCH}/${pattern})
  set(${out_var} ${_srcs} PARENT_SCOPE)
endfunction()
