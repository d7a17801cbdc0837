// The emu backend (CPU emulation of each kernel's numerics, the default) and the fault backend
// (the same emulation with one named defect injected), DESIGN.md §4.
#pragma once

#include <memory>
#include <string>

#include "core/backend.h"

namespace opgate {

// defect "" = faithful emulation ("emu"); otherwise a name from all_defects() ("fault:<defect>").
Expected<std::unique_ptr<Backend>> make_emu_backend(const std::string& defect);

}  // namespace opgate
