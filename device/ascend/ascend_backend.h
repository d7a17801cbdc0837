// The ascend backend: the real aclnn kernels through CANN, loaded at run time with dlopen
// (DESIGN.md §4; library lookup in spec ascend-abi.md). No CANN headers are needed to build it.
#pragma once

#include <memory>

#include "core/backend.h"

namespace opgate {

// The backend, or kUnsupported "ascend backend unavailable: <exact reason>".
Expected<std::unique_ptr<Backend>> make_ascend_backend();

}  // namespace opgate
