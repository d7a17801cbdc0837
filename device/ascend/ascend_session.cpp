// Per-process device context of the ascend backend and the device probe run in a helper child
// (spec ascend-abi.md §7, §9 steps 4 and 7).
#include "device/ascend/ascend_session.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "core/child_process.h"

namespace opgate::ascend {

DeviceSession::DeviceSession(std::shared_ptr<const AclLibraries> libs, int32_t device)
    : libs_(std::move(libs)), device_(device) {}

DeviceSession::~DeviceSession() { teardown(); }

void DeviceSession::teardown() {
  if (owner_ != getpid()) {
    // The parent's context: its handles mean nothing here and must not be destroyed.
    stream_.release();
    return;
  }
  const AclApi& api = libs_->api();
  stream_.reset();
  if (device_set_) api.aclrtResetDevice(device_);
  if (acl_initialised_) api.aclFinalize();
  device_set_ = acl_initialised_ = false;
  owner_ = 0;
}

Status DeviceSession::ensure() {
  const pid_t self = getpid();
  if (owner_ != 0 && owner_ != self) {
    stream_.release();
    acl_initialised_ = device_set_ = false;
    failure_ = Status::ok();
    owner_ = 0;
  }
  if (!failure_.is_ok()) return failure_;
  if (owner_ == self && stream_.get() != nullptr) return Status::ok();
  owner_ = self;
  const AclApi& api = libs_->api();
  aclError rc = api.aclInit(nullptr);
  if (rc != acl::kSuccess && rc != acl::kErrorRepeatInitialize) return failure_ = call_failed(api, "aclInit(NULL)", rc);
  acl_initialised_ = rc == acl::kSuccess;
  rc = api.aclrtSetDevice(device_);
  if (rc != acl::kSuccess) return failure_ = call_failed(api, fmt::format("aclrtSetDevice({})", device_), rc);
  device_set_ = true;
  // Deterministic computation before the first aclnn call: the context option, and the process
  // option nnopbase reads where the runtime has it (§7).
  rc = api.aclrtCtxSetSysParamOpt(acl::kOptDeterministic, 1);
  if (rc != acl::kSuccess) {
    return failure_ = call_failed(api, "aclrtCtxSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1)", rc);
  }
  if (api.aclrtSetSysParamOpt != nullptr) {
    rc = api.aclrtSetSysParamOpt(acl::kOptDeterministic, 1);
    if (rc != acl::kSuccess) {
      return failure_ = call_failed(api, "aclrtSetSysParamOpt(ACL_OPT_DETERMINISTIC, 1)", rc);
    }
  }
  aclrtStream stream = nullptr;
  rc = api.aclrtCreateStream(&stream);
  if (rc != acl::kSuccess) return failure_ = call_failed(api, "aclrtCreateStream", rc);
  stream_ = StreamHandle(&api, stream);
  return Status::ok();
}

Expected<int32_t> device_from_env() {
  const char* v = std::getenv("OPGATE_ASCEND_DEVICE");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const long id = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || id < 0 || id > 1023) {
    return parse_error(fmt::format("OPGATE_ASCEND_DEVICE='{}' is not a device id (an integer in [0, 1023])", v));
  }
  return static_cast<int32_t>(id);
}

namespace {

// The body of the probe child: device facts as JSON, or {"error": why}.
nlohmann::json probe_in_child(std::shared_ptr<const AclLibraries> libs, int32_t device) {
  const AclApi& api = libs->api();
  DeviceSession session(libs, device);
  const Status st = session.ensure();
  if (!st.is_ok()) {
    std::string error = st.message();
    uint32_t count = 0;
    if (api.aclrtGetDeviceCount(&count) == acl::kSuccess) error += fmt::format(" (aclrtGetDeviceCount: {})", count);
    return {{"error", error}};
  }
  nlohmann::json j{{"device", device}, {"deterministic", true}};
  uint32_t count = 0;
  const aclError rc = api.aclrtGetDeviceCount(&count);
  j["device_count"] = rc == acl::kSuccess ? nlohmann::json(count) : nlohmann::json(failure_text(api, "aclrtGetDeviceCount", rc));
  const char* soc = api.aclrtGetSocName();
  if (soc == nullptr || *soc == '\0') return {{"error", "aclrtGetSocName returned no SoC name"}};
  j["soc"] = soc;
  if (api.aclsysGetCANNVersion == nullptr) {
    j["cann_version"] = "unknown (the runtime does not export aclsysGetCANNVersion)";
  } else {
    aclCANNPackageVersion v{};
    const aclError vrc = api.aclsysGetCANNVersion(acl::kPackageCann, &v);
    v.version[sizeof v.version - 1] = '\0';
    j["cann_version"] = vrc == acl::kSuccess ? std::string(v.version)
                                             : "unknown (" + failure_text(api, "aclsysGetCANNVersion", vrc) + ")";
  }
  return j;
}

Status unavailable(std::string reason) { return Status(StatusCode::kUnsupported, std::move(reason)); }

}  // namespace

Expected<nlohmann::json> probe_device(std::shared_ptr<const AclLibraries> libs, int32_t device, double timeout_s) {
  const ChildOutcome child = run_in_child(
      [&] { return probe_in_child(libs, device).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); },
      timeout_s);
  switch (child.end) {
    case ChildOutcome::End::kNotStarted: return internal_error("device probe: " + child.error);
    case ChildOutcome::End::kInterrupted: return unavailable("the device probe was interrupted (SIGINT/SIGTERM)");
    case ChildOutcome::End::kTimedOut:
      return unavailable(fmt::format("the device probe (aclInit, aclrtSetDevice({})) did not finish within {} s",
                                     device, timeout_s));
    case ChildOutcome::End::kSignaled:
      return unavailable(fmt::format("the device probe process (aclInit, aclrtSetDevice({})) died of signal {} ({})",
                                     device, child.signal, strsignal(child.signal)));
    case ChildOutcome::End::kExited: break;
  }
  const std::string& text = child.output;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return unavailable(fmt::format("the device probe process exited with status {} without a result",
                                   child.exit_status));
  }
  if (j.contains("error")) {
    return unavailable(fmt::format("the device cannot be used: {}; check `npu-smi info`, the driver under "
                                   "/usr/local/Ascend/driver and OPGATE_ASCEND_DEVICE / ASCEND_RT_VISIBLE_DEVICES",
                                   j["error"].get<std::string>()));
  }
  return j;
}

}  // namespace opgate::ascend
