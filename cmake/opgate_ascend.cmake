# The ascend backend's operator table (device/ascend/README.md): the OPGATE_OPS members that have
# marshalling in device/ascend/<stem>.cpp. An operator without it stays out of the table and the
# backend reports "no ascend marshalling for <op> in this build" (SKIPPED) instead of failing the
# build. The top-level CMakeLists already compiles device/ascend/<stem>.cpp for every listed op.
set(OPGATE_ASCEND_OPS "")
foreach(op IN LISTS OPGATE_OPS)
  if(EXISTS ${CMAKE_SOURCE_DIR}/device/ascend/${op}.cpp AND EXISTS ${CMAKE_SOURCE_DIR}/device/ascend/${op}.h)
    list(APPEND OPGATE_ASCEND_OPS ${op})
  endif()
endforeach()

list(REMOVE_DUPLICATES OPGATE_ASCEND_OPS)
set(_list "// Generated from OPGATE_OPS by cmake/opgate_ascend.cmake; do not edit.\n")
set(_headers "${_list}")
foreach(op IN LISTS OPGATE_ASCEND_OPS)
  string(APPEND _list "OPGATE_ASCEND_OP(${op})\n")
  string(APPEND _headers "#include \"device/ascend/${op}.h\"\n")
endforeach()
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/opgate/ascend_op_list.inc CONTENT "${_list}")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/opgate/ascend_op_headers.inc CONTENT "${_headers}")
unset(_list)
unset(_headers)
message(STATUS "opgate: ascend marshalling for: ${OPGATE_ASCEND_OPS}")
