# Warning and sanitizer flags applied to every opgate target.
function(opgate_target_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
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
