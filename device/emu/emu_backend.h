// The emu backend (CPU emulation of each kernel's numerics, the default) and the fault backend
// (the same emulation with one named defect injected), DESIGN.md §4.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/backend.h"

namespace opgate {

// defect "" = faithful emulation ("emu"); otherwise a name from all_defects() ("fault:<defect>").
// Fails when OPGATE_EMU_SOC names no chip emu::find_soc knows.
Expected<std::unique_ptr<Backend>> make_emu_backend(const std::string& defect);

namespace emu {

// A chip the emulator plays: the core counts a kernel's tiling splits work over (only the
// summation order depends on them).
struct Soc {
  std::string name;  // as aclrtGetSocName reports it; "Ascend910_93" stands for every A3 chip
  int64_t aic = 0;   // cube cores
  int64_t aiv = 0;   // vector cores
};

// The chip of an aclrtGetSocName name (Ascend910B1..B4, Ascend910_93xx), or a parse error.
Expected<Soc> find_soc(const std::string& name);

// The chip every emulator plays: OPGATE_EMU_SOC when it names one, else Ascend910B3 (20 AIC,
// 40 AIV). Read once; the ascend backend reads its own chip from the device.
const Soc& soc();

}  // namespace emu
}  // namespace opgate
