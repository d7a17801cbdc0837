// AscendBackend: the real aclnn kernels through CANN loaded at run time (DESIGN.md §4). The
// operator table is generated from the OPGATE_OPS members that have device/ascend/<stem>.cpp
// (cmake/opgate_ascend.cmake); an operator without marshalling is SKIPPED, not a build error.
#include "device/ascend/ascend_backend.h"

#include <map>
#include <optional>

#include <fmt/format.h>

#include "core/op_registry.h"
#include "device/ascend/ascend_call.h"
#include "device/ascend/ascend_session.h"
#include "opgate/ascend_op_headers.inc"

namespace opgate {
namespace {

using ascend::AscendOp;
using ascend::ResolvedEntry;

// How long the device probe (aclInit, aclrtSetDevice, SoC query in a child) may take.
constexpr double kProbeTimeoutS = 300;

const std::map<std::string, const AscendOp*>& marshalled_ops() {
  static const std::map<std::string, const AscendOp*> ops = {
#define OPGATE_ASCEND_OP(stem) {#stem, &ascend::stem::op()},
#include "opgate/ascend_op_list.inc"
#undef OPGATE_ASCEND_OP
  };
  return ops;
}

// One operator's marshalling and the entry point this CANN serves it with.
struct Binding {
  const AscendOp* op = nullptr;
  std::optional<ResolvedEntry> entry;
  std::string unavailable;  // why there is no entry
};

Binding bind(const ascend::AclLibraries& libs, const AscendOp& op) {
  Binding b;
  b.op = &op;
  std::string tried;
  for (const auto& name : op.entries) {
    const auto first = libs.find_op_symbol(name + "GetWorkspaceSize");
    const auto second = libs.find_op_symbol(name);
    if (first && second) {
      b.entry = ResolvedEntry{name, first->address, second->address, second->library};
      return b;
    }
    tried += (tried.empty() ? "" : ", ") + (first ? name : name + "GetWorkspaceSize");
  }
  b.unavailable = fmt::format("{} not exported by the operator libraries found ({}): this CANN lacks the operator",
                              tried, libs.loaded_op_libraries());
  return b;
}

class AscendBackend final : public Backend {
 public:
  AscendBackend(std::shared_ptr<const ascend::AclLibraries> libs, int32_t device, nlohmann::json facts)
      : libs_(libs), facts_(std::move(facts)), session_(libs, device) {
    soc_.name = facts_.value("soc", "");
    soc_.family = ascend::soc_family(soc_.name);
    soc_.cann_version = facts_.value("cann_version", "");
    for (const auto& [stem, op] : marshalled_ops()) bindings_[stem] = bind(*libs_, *op);
  }

  std::string name() const override { return "ascend"; }

  nlohmann::json probe() const override {
    nlohmann::json j = facts_;
    j["backend"] = "ascend";
    j["soc_family"] = ascend::soc_family_name(soc_.family);
    j["libraries"] = libs_->describe();
    nlohmann::json ops = nlohmann::json::object();
    // Every operator of the build, from the generated op list (the registry lives above device/).
    static const char* const kStems[] = {
#define OPGATE_OP(stem) #stem,
#include "opgate/op_list.inc"
#undef OPGATE_OP
    };
    for (const std::string stem : kStems) {
      const auto it = bindings_.find(stem);
      if (it == bindings_.end()) {
        ops[stem] = {{"unavailable", no_marshalling(stem)}};
      } else if (!it->second.entry) {
        ops[stem] = {{"unavailable", it->second.unavailable}};
      } else {
        ops[stem] = {{"aclnn", it->second.entry->name}, {"library", it->second.entry->library}};
      }
    }
    j["ops"] = ops;
    return j;
  }

  Support supports(const Problem& problem) const override {
    const auto it = bindings_.find(problem.op().stem);
    if (it == bindings_.end()) return {false, no_marshalling(problem.op().stem)};
    if (!it->second.entry) return {false, it->second.unavailable};
    return it->second.op->supports(problem, soc_, it->second.entry->name);
  }

  Status run(const Problem& problem, const TensorMap& inputs, TensorMap& outputs) override {
    const Support s = supports(problem);
    if (!s.yes) return Status(StatusCode::kUnsupported, s.reason);
    const Binding& b = bindings_.at(problem.op().stem);
    return ascend::run_call(session_, *b.op, *b.entry, problem, inputs, outputs, &warnings_);
  }

  std::vector<std::string> take_warnings() override {
    std::vector<std::string> out;
    out.swap(warnings_);
    return out;
  }

  // Unsupported operators and SoCs give kUnsupported: no device verdict exists to compare.
  Expected<int64_t> rejection_code(const Problem& problem) override {
    const Support s = supports(problem);
    if (!s.yes) return Status(StatusCode::kUnsupported, s.reason);
    const Binding& b = bindings_.at(problem.op().stem);
    return ascend::probe_rejection(session_, *b.op, *b.entry, problem);
  }

 private:
  static std::string no_marshalling(const std::string& stem) {
    return fmt::format("no ascend marshalling for {} in this build (device/ascend/{}.cpp)", stem, stem);
  }

  std::shared_ptr<const ascend::AclLibraries> libs_;
  nlohmann::json facts_;
  ascend::SocInfo soc_;
  std::map<std::string, Binding> bindings_;
  ascend::DeviceSession session_;
  std::vector<std::string> warnings_;  // of the runs since the last take_warnings()
};

}  // namespace

Expected<std::unique_ptr<Backend>> make_ascend_backend(std::optional<int32_t> chosen) {
  auto device = chosen ? Expected<int32_t>(*chosen) : ascend::device_from_env();
  if (!device) return device.status();
  auto libs = ascend::AclLibraries::load();
  if (!libs) return Status(StatusCode::kUnsupported, "ascend backend unavailable: " + libs.status().message());
  auto facts = ascend::probe_device(*libs, *device, kProbeTimeoutS);
  if (!facts) return Status(StatusCode::kUnsupported, "ascend backend unavailable: " + facts.status().message());
  return std::unique_ptr<Backend>(std::make_unique<AscendBackend>(*libs, *device, std::move(*facts)));
}

}  // namespace opgate
