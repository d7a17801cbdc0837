// EmuBackend: dispatches to device/emu/<op>.cpp through a table expanded from the op list.
#include "device/emu/emu_backend.h"

#include <cstdlib>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "core/op_registry.h"
#include "opgate/device_emu_headers.inc"

namespace opgate {
namespace {

using RunFn = std::function<Status(const Problem&, const TensorMap&, TensorMap&, const std::string&)>;

struct EmuOp {
  RunFn run;
  std::function<std::vector<DefectInfo>()> defects;
};

const std::map<std::string, EmuOp>& emu_ops() {
  static const std::map<std::string, EmuOp> ops = {
#define OPGATE_OP(stem)                                                                          \
  {#stem,                                                                                        \
   {[](const Problem& p, const TensorMap& in, TensorMap& out, const std::string& defect) {       \
      return emu::stem::run(p.params<ref::stem::Params>(), in, out, defect);                    \
    },                                                                                           \
    emu::stem::defects}},
#include "opgate/op_list.inc"
#undef OPGATE_OP
  };
  return ops;
}

class EmuBackend final : public Backend {
 public:
  explicit EmuBackend(std::string defect) : defect_(std::move(defect)) {}
  std::string name() const override { return defect_.empty() ? "emu" : "fault:" + defect_; }
  nlohmann::json probe() const override {
    // The chip the tilings play; "soc" is left to backends that read a real one.
    nlohmann::json j{{"backend", name()}, {"device", "CPU emulation of the A2/A3 kernels"},
                     {"emulated_soc", emu::soc().name}};
    if (!defect_.empty()) j["defect"] = defect_;
    return j;
  }
  Support supports(const Problem& /*problem*/) const override { return {}; }
  Status run(const Problem& problem, const TensorMap& inputs, TensorMap& outputs) override {
    auto it = emu_ops().find(problem.op().stem);
    if (it == emu_ops().end()) return internal_error(fmt::format("emu: no emulation of {}", problem.op().stem));
    // A defect of another operator leaves this one faithful.
    std::string defect;
    for (const auto& d : it->second.defects()) {
      if (d.name == defect_) defect = defect_;
    }
    return it->second.run(problem, inputs, outputs, defect);
  }
  Expected<int64_t> rejection_code(const Problem& problem) override {
    return problem.validate().aclnn_code();
  }

 private:
  std::string defect_;
};

// The core counts of the chips the emulator can play (aclrtGetSocName names; platform tables of
// CANN: 910B1/B2 and A3 24 AIC / 48 AIV, 910B3/B4 20 AIC / 40 AIV).
const emu::Soc kSocs[] = {
    {"Ascend910B1", 24, 48}, {"Ascend910B2", 24, 48}, {"Ascend910B3", 20, 40},
    {"Ascend910B4", 20, 40}, {"Ascend910_93", 24, 48},
};
constexpr const char* kDefaultSoc = "Ascend910B3";
constexpr const char* kSocEnv = "OPGATE_EMU_SOC";

const char* soc_env() {
  const char* v = std::getenv(kSocEnv);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

namespace emu {

Expected<Soc> find_soc(const std::string& name) {
  std::string names;
  for (const Soc& s : kSocs) {
    // The A3 row covers every Ascend910_93xx part, as ascend::soc_family does.
    const bool family = s.name == "Ascend910_93" && name.rfind(s.name, 0) == 0;
    if (name == s.name || family) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  return parse_error(fmt::format("{}='{}' is not a chip the emulator knows ({}, or any Ascend910_93xx)", kSocEnv,
                                 name, names));
}

const Soc& soc() {
  static const Soc chosen = [] {
    const char* env = soc_env();
    auto named = find_soc(env != nullptr ? env : kDefaultSoc);
    return named ? *named : *find_soc(kDefaultSoc);
  }();
  return chosen;
}

}  // namespace emu

std::vector<DefectInfo> all_defects() {
  std::vector<DefectInfo> out;
  for (const auto& [stem, op] : emu_ops()) {
    for (auto& d : op.defects()) out.push_back(std::move(d));
  }
  return out;
}

Expected<std::unique_ptr<Backend>> make_emu_backend(const std::string& defect) {
  if (const char* env = soc_env()) OPGATE_TRY(emu::find_soc(env).status());
  if (!defect.empty()) {
    bool known = false;
    std::string names;
    for (const auto& d : all_defects()) {
      known = known || d.name == defect;
      names += (names.empty() ? "" : ", ") + d.name;
    }
    if (!known) return parse_error(fmt::format("unknown defect '{}' (known: {})", defect, names));
  }
  return std::unique_ptr<Backend>(std::make_unique<EmuBackend>(defect));
}

}  // namespace opgate
