# Warning, floating-point and sanitizer flags applied to every opgate target.
function(opgate_target_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  # GCC's -Wpsabi notes ("the ABI for passing parameters with 64-byte alignment has changed in GCC
  # 4.6") flag functions that take or return 64-byte vector types by value. They matter only when
  # such a call crosses objects built by different compilers; here the vector types (V8 and friends
  # in reference/math, device/emu) live in always-inline helpers and file-local kernels of objects
  # one compiler builds, and never cross a non-inlined call between differently-compiled objects.
  target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-psabi>)
  # No FP contraction anywhere: GCC fuses a*b+c into one FMA by default wherever the ISA has it
  # (baseline on aarch64, target("fma") paths on x86-64), which changes the bits of fills, dtype
  # conversions, references, emulators and metrics between architectures and ISA paths. Golden
  # files written on one must verify bit for bit on the other (tools/check_fp_contract.py checks the
  # effective flag of every translation unit in compile_commands.json; test harness.fp_contract).
  target_compile_options(${target} PRIVATE -ffp-contract=off)
  if(OPGATE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(OPGATE_SANITIZE)
    string(REPLACE ";" "," _san "${OPGATE_SANITIZE}")
    target_compile_options(${target} PRIVATE -fsanitize=${_san} -fno-omit-frame-pointer
                           -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${_san})
  endif()
endfunction()
