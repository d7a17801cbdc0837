# The gate's shards as ctest tests, for one host with several NPUs: test gate.shard.<i>of<N> runs
# shard i of N with RESOURCE_GROUPS "npus:1", so `ctest --resource-spec-file npus.json -j 8 -L gate`
# runs one shard per NPU at a time and passes each the NPU CTest allocated (opgate_gate_shard.sh);
# gate.merge then merges the shards into one report and gate decision. docs/distribution/README.md.
#
# opgate_add_gate_shards(SHARDS <N> OPGATE <opgate> OUT <report dir> [ROOT <repo root>]
#                        [LABEL <label, default gate>] [ARGS <opgate run args>...])
# In this project: cmake -DOPGATE_GATE_SHARDS=8 [-DOPGATE_GATE_ARGS="--backend;ascend;--tier;nightly"].
set(OPGATE_GATE_SHARD_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/opgate_gate_shard.sh)

function(opgate_add_gate_shards)
  cmake_parse_arguments(G "" "SHARDS;OPGATE;OUT;ROOT;LABEL" "ARGS" ${ARGN})
  if(NOT G_SHARDS OR NOT G_SHARDS MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "opgate_add_gate_shards: SHARDS must be a positive integer, got '${G_SHARDS}'")
  endif()
  if(NOT G_OPGATE OR NOT G_OUT)
    message(FATAL_ERROR "opgate_add_gate_shards: OPGATE and OUT are required")
  endif()
  if(NOT G_LABEL)
    set(G_LABEL gate)
  endif()
  set(root_args)
  if(G_ROOT)
    set(root_args --root ${G_ROOT})
  endif()
  find_program(OPGATE_BASH bash REQUIRED)
  math(EXPR last "${G_SHARDS} - 1")
  set(shard_tests)
  set(shard_dirs)
  foreach(i RANGE 0 ${last})
    set(name gate.shard.${i}of${G_SHARDS})
    add_test(NAME ${name} COMMAND ${OPGATE_BASH} ${OPGATE_GATE_SHARD_SCRIPT} ${G_OPGATE} ${i}/${G_SHARDS}
                                  ${G_OUT}/shard-${i} ${root_args} ${G_ARGS})
    # One slot of one NPU; CTest sets CTEST_RESOURCE_GROUP_0_NPUS to the one it allocated.
    set_tests_properties(${name} PROPERTIES LABELS ${G_LABEL} RESOURCE_GROUPS "npus:1")
    list(APPEND shard_tests ${name})
    list(APPEND shard_dirs ${G_OUT}/shard-${i})
  endforeach()
  add_test(NAME gate.merge COMMAND ${G_OPGATE} merge ${shard_dirs} --out ${G_OUT}/merged)
  set_tests_properties(gate.merge PROPERTIES LABELS ${G_LABEL} DEPENDS "${shard_tests}")
endfunction()

# This project's gate, when asked for: none by default, so the test suite stays as it is.
if(TARGET opgate)
  set(OPGATE_GATE_SHARDS 0 CACHE STRING "Add the gate as this many ctest shard tests (label gate; 0: none)")
  set(OPGATE_GATE_ARGS "--tier;ci" CACHE STRING "opgate run arguments of the gate shard tests (a ;-list)")
  if(OPGATE_GATE_SHARDS GREATER 0)
    enable_testing()
    opgate_add_gate_shards(SHARDS ${OPGATE_GATE_SHARDS} OPGATE $<TARGET_FILE:opgate> ROOT ${CMAKE_SOURCE_DIR}
                           OUT ${CMAKE_BINARY_DIR}/reports/gate ARGS ${OPGATE_GATE_ARGS})
  endif()
endif()
