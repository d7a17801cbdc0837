// The backend factory: the names users type (emu, fault:<defect>, ascend) to backends of device/.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/defect.h"
#include "core/status.h"

namespace opgate {

// "emu", "fault:<defect>" or "ascend". Unknown names or defects are kParseError naming them;
// an unavailable device is kUnsupported with the exact reason.
Expected<std::unique_ptr<Backend>> make_backend(const std::string& name);
// Every defect of the fault backend, across operators (defined by the emu backend,
// device/emu/emu_backend.cpp).
std::vector<DefectInfo> all_defects();

}  // namespace opgate
