# The per-operator wiring: every layer holds one file per stem in OPGATE_OPS (style-and-layout.md B5).

# Fails the configure step with the list of every missing per-operator file (tools/new-op.sh writes
# them all as stubs; the tests are one file per role, tests/CMakeLists.txt).
function(opgate_check_op_files)
  set(_missing "")
  foreach(op IN LISTS OPGATE_OPS)
    foreach(f reference/${op}.h reference/${op}.cpp device/layout/${op}.h device/layout/${op}.cpp
              device/emu/${op}.h device/emu/${op}.cpp cases/${op}.h cases/${op}.cpp
              cases/${op}/README.md cases/${op}/smoke.json cases/${op}/invalid.json
              tests/reference/${op}_test.cpp tests/device/${op}_layout_test.cpp
              tests/device/${op}_emu_test.cpp tests/properties/${op}_props_test.cpp)
      if(NOT EXISTS ${CMAKE_SOURCE_DIR}/${f})
        list(APPEND _missing ${f})
      endif()
    endforeach()
  endforeach()
  if(_missing)
    list(JOIN _missing "\n  " _text)
    message(FATAL_ERROR "opgate: operators in OPGATE_OPS lack these files:\n  ${_text}")
  endif()
endfunction()

# Sources of one layer folder for every operator that has a .cpp there.
function(opgate_layer_sources out_var layer)
  set(_srcs "")
  foreach(op IN LISTS OPGATE_OPS)
    if(EXISTS ${CMAKE_SOURCE_DIR}/${layer}/${op}.cpp)
      list(APPEND _srcs ${CMAKE_SOURCE_DIR}/${layer}/${op}.cpp)
    endif()
  endforeach()
  set(${out_var} ${_srcs} PARENT_SCOPE)
endfunction()

# op_list.inc: one OPGATE_OP(stem) line per operator, expanded by the registries.
function(opgate_generate_op_list path)
  set(_text "// Generated from OPGATE_OPS in CMakeLists.txt; do not edit.\n")
  foreach(op IN LISTS OPGATE_OPS)
    string(APPEND _text "OPGATE_OP(${op})\n")
  endforeach()
  file(CONFIGURE OUTPUT ${path} CONTENT "${_text}")
  # One include list per layer whose registry expands the op list.
  get_filename_component(_dir ${path} DIRECTORY)
  foreach(layer cases device/emu)
    string(REPLACE "/" "_" _name ${layer})
    set(_inc "// Generated from OPGATE_OPS in CMakeLists.txt; do not edit.\n")
    foreach(op IN LISTS OPGATE_OPS)
      string(APPEND _inc "#include \"${layer}/${op}.h\"\n")
    endforeach()
    file(CONFIGURE OUTPUT ${_dir}/${_name}_headers.inc CONTENT "${_inc}")
  endforeach()
endfunction()

# The reference's helper sources: the shared maths in reference/math/ (every operator may use them)
# and every .cpp under reference/<stem>/ and reference/<stem>/<OPGATE_ARCH>/ (its ISA kernels) for
# each stem in OPGATE_OPS (an operator's own helpers; those of an operator not in the list are not
# built).
function(opgate_reference_helper_sources out_var)
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/reference/math/*.cpp)
  foreach(op IN LISTS OPGATE_OPS)
    file(GLOB _own CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/reference/${op}/*.cpp
         ${CMAKE_SOURCE_DIR}/reference/${op}/${OPGATE_ARCH}/*.cpp)
    list(APPEND _srcs ${_own})
  endforeach()
  set(${out_var} ${_srcs} PARENT_SCOPE)
endfunction()
