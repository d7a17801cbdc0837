# The layering rule of core/ (DESIGN.md §2): core includes and links nothing above it, so "core
# knows no operator" holds for the program, not only for its headers.
#
# Two checks:
# - includes: every core/*.h and core/*.cpp is scanned for #include of cases/, device/,
#   reference/, harness/ or tools/; run at every build of opgate_core (a custom command that
#   depends on each core file) and usable in script mode:
#     cmake -DOPGATE_CHECK_CORE_DIR=<dir> -P cmake/opgate_layering.cmake
# - links: opgate_core's LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES may not name a library above
#   it; checked at the end of the configure step (after every target_link_libraries call), and in
#   script mode with -DOPGATE_CHECK_CORE_LINKS="<lib;lib>".
# The include check covers the layers above core too (opgate_check_layer_includes): harness may not
# include history/, reports/ or tools/; history may not include harness/ (it links only core),
# reports/ or tools/; reports/ (above harness and history) may not include tools/. Script mode:
#     cmake -DOPGATE_CHECK_LAYER=<core|harness|history|reports> -DOPGATE_CHECK_LAYER_DIR=<dir> -P ...
# tests/harness/layering_test.sh plants a violation of each kind and expects the check to fail.

if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.22)  # IN_LIST and the other policies of the project
endif()

set(OPGATE_ABOVE_CORE_DIRS cases device reference harness history reports tools)
# The folders each checked layer may not include (it sits below them, or beside them unlinked).
set(OPGATE_ABOVE_core_DIRS ${OPGATE_ABOVE_CORE_DIRS})
set(OPGATE_ABOVE_harness_DIRS history reports tools)
set(OPGATE_ABOVE_history_DIRS cases device reference harness reports tools)
set(OPGATE_ABOVE_reports_DIRS tools)
set(OPGATE_ABOVE_CORE_LIBS opgate_reference opgate_device opgate_cases opgate_harness opgate)

# Fails naming each file and include line of `dir` that reaches above core.
function(opgate_check_core_includes dir)
  opgate_check_layer_includes(core ${dir})
endfunction()

# Fails naming each file and include line of `dir` (the layer `layer`) that reaches above it.
function(opgate_check_layer_includes layer dir)
  if(NOT DEFINED OPGATE_ABOVE_${layer}_DIRS)
    message(FATAL_ERROR "opgate_layering: unknown layer '${layer}' (core, harness, history or reports)")
  endif()
  file(GLOB _files ${dir}/*.h ${dir}/*.cpp)
  list(JOIN OPGATE_ABOVE_${layer}_DIRS "|" _above)
  set(_offenders "")
  foreach(_file IN LISTS _files)
    file(STRINGS ${_file} _lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<](${_above})/")
    foreach(_line IN LISTS _lines)
      string(STRIP "${_line}" _line)
      list(APPEND _offenders "  ${_file}: ${_line}")
    endforeach()
  endforeach()
  if(_offenders)
    list(JOIN _offenders "\n" _text)
    message(FATAL_ERROR "${layer}/ includes a layer above it (core <- reference <- device <- cases <- harness, "
                        "core <- history; harness, history <- reports <- tools); "
                        "move the code up or the declaration down:\n${_text}")
  endif()
endfunction()

# Fails when `libs` names a library above core.
function(opgate_check_core_link_list libs)
  set(_offenders "")
  foreach(_lib IN LISTS libs)
    if(_lib IN_LIST OPGATE_ABOVE_CORE_LIBS)
      list(APPEND _offenders ${_lib})
    endif()
  endforeach()
  if(_offenders)
    list(JOIN _offenders ", " _text)
    message(FATAL_ERROR "opgate_core links a library above it: ${_text} (core <- reference <- device <- cases <- "
                        "harness); a definition core needs belongs in core")
  endif()
endfunction()

# Deferred to the end of the configure step, so a later target_link_libraries is seen too.
function(opgate_check_core_links target)
  get_target_property(_links ${target} LINK_LIBRARIES)
  get_target_property(_interface ${target} INTERFACE_LINK_LIBRARIES)
  set(_all "")
  foreach(_list IN ITEMS _links _interface)
    if(${_list})
      list(APPEND _all ${${_list}})
    endif()
  endforeach()
  opgate_check_core_link_list("${_all}")
endfunction()

function(opgate_check_core_layering target dir)
  opgate_check_core_includes(${dir})
  # Deferred arguments are expanded when the call runs, so the target name is baked in now.
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${CMAKE_SOURCE_DIR}]] CALL opgate_check_core_links [[${target}]])")
  file(GLOB _files CONFIGURE_DEPENDS ${dir}/*.h ${dir}/*.cpp)
  set(_stamp ${CMAKE_BINARY_DIR}/generated/opgate/core_layering.stamp)
  add_custom_command(OUTPUT ${_stamp}
                     COMMAND ${CMAKE_COMMAND} -DOPGATE_CHECK_CORE_DIR=${dir}
                             -P ${CMAKE_SOURCE_DIR}/cmake/opgate_layering.cmake
                     COMMAND ${CMAKE_COMMAND} -E touch ${_stamp}
                     DEPENDS ${_files} ${CMAKE_SOURCE_DIR}/cmake/opgate_layering.cmake
                     COMMENT "Checking that core/ includes nothing above it")
  add_custom_target(opgate_core_layering DEPENDS ${_stamp})
  add_dependencies(${target} opgate_core_layering)
endfunction()

# The include check of `layer` (its folder `dir`) at every build of `target`.
function(opgate_check_layer_at_build layer target dir)
  file(GLOB _files CONFIGURE_DEPENDS ${dir}/*.h ${dir}/*.cpp)
  set(_stamp ${CMAKE_BINARY_DIR}/generated/opgate/${layer}_layering.stamp)
  add_custom_command(OUTPUT ${_stamp}
                     COMMAND ${CMAKE_COMMAND} -DOPGATE_CHECK_LAYER=${layer} -DOPGATE_CHECK_LAYER_DIR=${dir}
                             -P ${CMAKE_SOURCE_DIR}/cmake/opgate_layering.cmake
                     COMMAND ${CMAKE_COMMAND} -E touch ${_stamp}
                     DEPENDS ${_files} ${CMAKE_SOURCE_DIR}/cmake/opgate_layering.cmake
                     COMMENT "Checking that ${layer}/ includes nothing above it")
  add_custom_target(opgate_${layer}_layering DEPENDS ${_stamp})
  add_dependencies(${target} opgate_${layer}_layering)
endfunction()

# Script mode (cmake -P): the checks on their own, for the build step and the test.
if(CMAKE_SCRIPT_MODE_FILE)
  if(DEFINED OPGATE_CHECK_LAYER)
    opgate_check_layer_includes(${OPGATE_CHECK_LAYER} ${OPGATE_CHECK_LAYER_DIR})
  endif()
  if(DEFINED OPGATE_CHECK_CORE_DIR)
    opgate_check_core_includes(${OPGATE_CHECK_CORE_DIR})
  endif()
  if(DEFINED OPGATE_CHECK_CORE_LINKS)
    opgate_check_core_link_list("${OPGATE_CHECK_CORE_LINKS}")
  endif()
endif()
