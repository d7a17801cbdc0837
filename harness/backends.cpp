// make_backend: the backend names users type (emu, fault:<defect>, ascend).
#include <fmt/format.h>

#include "harness/backends.h"

#include "device/ascend/ascend_backend.h"
#include "device/emu/emu_backend.h"

namespace opgate {

Expected<std::unique_ptr<Backend>> make_backend(const std::string& name, std::optional<int32_t> ascend_device) {
  if (name == "emu") return make_emu_backend("");
  if (name.rfind("fault:", 0) == 0) return make_emu_backend(name.substr(6));
  if (name == "fault") return parse_error("backend 'fault' needs a defect: fault:<defect> (see `opgate list --defects`)");
  if (name == "ascend") return make_ascend_backend(ascend_device);
  return parse_error(fmt::format("unknown backend '{}' (emu, fault:<defect>, ascend)", name));
}

}  // namespace opgate
