// The device context of one process: aclInit, aclrtSetDevice, the determinism switch and a
// stream, created lazily on first use and torn down in reverse order. The runner forks one child
// per case after the backend exists; a context does not survive fork, so nothing is initialised
// in the parent and a session inherited through fork is abandoned and initialised anew.
#pragma once

#include <sys/types.h>

#include <memory>

#include <nlohmann/json.hpp>

#include "device/ascend/acl_handles.h"
#include "device/ascend/acl_loader.h"

namespace opgate::ascend {

class DeviceSession {
 public:
  DeviceSession(std::shared_ptr<const AclLibraries> libs, int32_t device);
  ~DeviceSession();
  DeviceSession(const DeviceSession&) = delete;
  DeviceSession& operator=(const DeviceSession&) = delete;

  // Initialises this process's context on first use (spec ascend-abi.md §9 step 4): aclInit
  // (100002 "already initialised" is fine), aclrtSetDevice, ACL_OPT_DETERMINISTIC = 1 through
  // aclrtCtxSetSysParamOpt and, where exported, aclrtSetSysParamOpt (§7) before any aclnn call,
  // then aclrtCreateStream. A failure is remembered and returned again.
  Status ensure();
  aclrtStream stream() const { return stream_.get(); }
  const AclApi& api() const { return libs_->api(); }
  int32_t device() const { return device_; }

 private:
  void teardown();

  std::shared_ptr<const AclLibraries> libs_;
  int32_t device_ = 0;
  pid_t owner_ = 0;  // the process that initialised; 0 = nothing initialised
  bool acl_initialised_ = false, device_set_ = false;
  Status failure_;
  StreamHandle stream_;
};

// The device id from OPGATE_ASCEND_DEVICE (default 0); kParseError for anything but an integer
// in [0, 1023].
Expected<int32_t> device_from_env();

// Device facts gathered in a short-lived child process, so the calling process never holds a
// context: {"device", "device_count", "soc", "cann_version", "deterministic"}. kUnsupported with
// the failing call, its code and the runtime's message when the device cannot be used (no NPU,
// no driver, wrong id), or when the child dies or exceeds `timeout_s`.
Expected<nlohmann::json> probe_device(std::shared_ptr<const AclLibraries> libs, int32_t device, double timeout_s);

}  // namespace opgate::ascend
