#!/usr/bin/env bash
# One shard of the gate as a ctest test (cmake/opgate_gate_tests.cmake): passes the NPU that CTest
# allocated to the test (CTEST_RESOURCE_GROUP_0_NPUS="id:<device id>,slots:1", set when ctest runs
# with --resource-spec-file) to the ascend backend as OPGATE_ASCEND_DEVICE, then runs
# `opgate run --shard <i/N> --out <dir> <args...>`. Other backends ignore the device.
# Usage: opgate_gate_shard.sh <opgate> <i/N> <out dir> [opgate run args...]
set -euo pipefail
opgate="$1" shard="$2" out="$3"
shift 3
alloc="${CTEST_RESOURCE_GROUP_0_NPUS:-}"
if [ -n "$alloc" ]; then
  if [[ ! "$alloc" =~ ^id:([0-9]+),slots:[0-9]+$ ]]; then
    echo "opgate_gate_shard.sh: error: CTEST_RESOURCE_GROUP_0_NPUS='$alloc': expected id:<device id>,slots:<n> (the npus ids of the resource spec file are device ids)" >&2
    exit 2
  fi
  export OPGATE_ASCEND_DEVICE="${BASH_REMATCH[1]}"
  echo "device: NPU $OPGATE_ASCEND_DEVICE from CTest (CTEST_RESOURCE_GROUP_0_NPUS=$alloc), as OPGATE_ASCEND_DEVICE"
else
  echo "device: no CTest allocation (ctest without --resource-spec-file); OPGATE_ASCEND_DEVICE=${OPGATE_ASCEND_DEVICE:-unset}"
fi
# --overwrite: each ctest run of the shard replaces its previous report (opgate refuses a folder
# holding a report otherwise).
exec "$opgate" run --shard "$shard" --out "$out" --overwrite "$@"
