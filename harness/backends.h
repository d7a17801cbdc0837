// The backend factory: the names users type (emu, fault:<defect>, ascend) to backends of device/.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/defect.h"
#include "core/status.h"

namespace opgate {

// "emu", "fault:<defect>" or "ascend". Unknown names or defects are kParseError naming them;
// an unavailable device is kUnsupported with the exact reason. `ascend_device` picks the NPU of
// an ascend backend (run --devices: one backend per worker); unset, OPGATE_ASCEND_DEVICE or 0.
Expected<std::unique_ptr<Backend>> make_backend(const std::string& name,
                                                std::optional<int32_t> ascend_device = std::nullopt);
// Every defect of the fault backend, across operators (defined by the emu backend,
// device/emu/emu_backend.cpp).
std::vector<DefectInfo> all_defects();

}  // namespace opgate
