// The ascend backend: the real aclnn kernels through CANN, loaded at run time with dlopen
// (DESIGN.md §4; library lookup in spec ascend-abi.md). No CANN headers are needed to build it.
// Environment: ASCEND_HOME_PATH / ASCEND_TOOLKIT_HOME / LD_LIBRARY_PATH (where CANN is, as
// set_env.sh exports them), OPGATE_ASCEND_DEVICE (device id, default 0), OPGATE_ASCEND_OP_LIBS
// (extra operator libraries tried first, e.g. a custom package's libcust_opapi.so).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "core/backend.h"

namespace opgate {

// The backend, or kUnsupported "ascend backend unavailable: <exact reason>" (no CANN library, a
// missing symbol, no usable device), or kParseError for a malformed OPGATE_ASCEND_DEVICE. Loads the
// libraries in this process but initialises the device only in a short-lived probe child; each
// process that runs a case initialises its own context on first use. `device` overrides
// OPGATE_ASCEND_DEVICE (run --devices gives each worker its own NPU).
Expected<std::unique_ptr<Backend>> make_ascend_backend(std::optional<int32_t> device = std::nullopt);

}  // namespace opgate
