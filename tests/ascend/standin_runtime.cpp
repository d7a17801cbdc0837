// Stand-in runtime (libascendcl.so, libacl_rt.so): aclInit/aclFinalize, devices, streams,
// memory and copies on host memory, the system options and the SoC/CANN facts. Built once per
// variant; OPGATE_STANDIN_OMIT_SYNCHRONIZE builds one that lacks aclrtSynchronizeStream.
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "standin.h"

#define STANDIN_DECLARE(required, ret, name, params) STANDIN_API ret name params;
OPGATE_ACL_RUNTIME_SYMBOLS(STANDIN_DECLARE)
#undef STANDIN_DECLARE

using standin::Kind;
using standin::state;

namespace {

// The default failure code of an injected runtime failure (ACL_ERROR_RT_DRV_INTERNAL_ERROR).
constexpr int kInjected = opgate::acl::kErrorRtDrvInternal;

int invalid(const std::string& why) {
  standin::set_error("stand-in: " + why);
  standin::trace("invalid: " + why);
  return opgate::acl::kErrorInvalidParam;
}

}  // namespace

aclError aclInit(const char* configPath) {
  auto& s = state();
  if (s.init_pid != 0 && s.init_pid != getpid()) return standin::require_context("aclInit", false);
  if (auto code = standin::injected_failure("aclInit", kInjected)) return *code;
  if (s.initialised) {
    standin::set_error("stand-in: aclInit called twice");
    return opgate::acl::kErrorRepeatInitialize;
  }
  s.init_pid = getpid();
  s.initialised = true;
  s.finalised = false;
  standin::trace(fmt::format("aclInit {}", configPath == nullptr ? "NULL" : configPath));
  return 0;
}

aclError aclFinalize(void) {
  if (int rc = standin::require_context("aclFinalize", false)) return rc;
  auto& s = state();
  s.initialised = false;
  s.finalised = true;
  standin::trace("aclFinalize");
  return 0;
}

const char* aclGetRecentErrMsg(void) { return standin::take_error(); }

aclError aclrtSetDevice(int32_t deviceId) {
  if (int rc = standin::require_context("aclrtSetDevice", false)) return rc;
  if (auto code = standin::injected_failure("aclrtSetDevice", kInjected)) return *code;
  const int count = std::atoi(standin::env("OPGATE_STANDIN_DEVICE_COUNT", "1").c_str());
  if (count == 0) {
    standin::set_error("stand-in: no NPU device (OPGATE_STANDIN_DEVICE_COUNT=0)");
    return opgate::acl::kErrorRtNoDevice;
  }
  if (deviceId < 0 || deviceId >= count) {
    standin::set_error(fmt::format("stand-in: device {} does not exist ({} device(s))", deviceId, count));
    return opgate::acl::kErrorRtInvalidDeviceId;
  }
  state().device = deviceId;
  standin::trace(fmt::format("aclrtSetDevice {}", deviceId));
  return 0;
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (int rc = standin::require_context("aclrtResetDevice", true)) return rc;
  if (deviceId != state().device) return invalid(fmt::format("aclrtResetDevice({}) of a device not set", deviceId));
  state().device = -1;
  state().ctx_deterministic = 0;
  standin::trace(fmt::format("aclrtResetDevice {}", deviceId));
  return 0;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (int rc = standin::require_context("aclrtGetDeviceCount", false)) return rc;
  if (count == nullptr) return invalid("aclrtGetDeviceCount(NULL)");
  *count = static_cast<uint32_t>(std::atoi(standin::env("OPGATE_STANDIN_DEVICE_COUNT", "1").c_str()));
  return 0;
}

aclError aclrtCreateStream(aclrtStream* stream) {
  if (int rc = standin::require_context("aclrtCreateStream", true)) return rc;
  if (auto code = standin::injected_failure("aclrtCreateStream", kInjected)) return *code;
  if (stream == nullptr) return invalid("aclrtCreateStream(NULL)");
  *stream = new char(0);
  standin::add_object(Kind::kStream, *stream);
  standin::trace("aclrtCreateStream");
  return 0;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  if (int rc = standin::require_context("aclrtDestroyStream", true)) return rc;
  if (!standin::remove_object(Kind::kStream, stream)) return invalid("aclrtDestroyStream of an unknown stream");
  standin::drop_queue(stream);
  delete static_cast<char*>(stream);
  standin::trace("aclrtDestroyStream");
  return 0;
}

#ifndef OPGATE_STANDIN_OMIT_SYNCHRONIZE
aclError aclrtSynchronizeStream(aclrtStream stream) {
  if (int rc = standin::require_context("aclrtSynchronizeStream", true)) return rc;
  if (!standin::is_live(Kind::kStream, stream)) return invalid("aclrtSynchronizeStream of an unknown stream");
  const std::string failure = standin::drain(stream);
  if (auto code = standin::injected_failure("aclrtSynchronizeStream", kInjected)) return *code;
  if (!failure.empty()) {
    standin::set_error("stand-in: kernel failed: " + failure);
    standin::trace("aclrtSynchronizeStream failed: " + failure);
    return opgate::acl::kErrorRtDrvInternal;
  }
  standin::trace("aclrtSynchronizeStream");
  return 0;
}
#endif

aclError aclrtMalloc(void** devPtr, size_t size, int32_t policy) {
  if (int rc = standin::require_context("aclrtMalloc", true)) return rc;
  if (auto code = standin::injected_failure("aclrtMalloc", opgate::acl::kErrorBadAlloc)) return *code;
  if (devPtr == nullptr || size == 0) return invalid(fmt::format("aclrtMalloc of {} bytes", size));
  if (policy < 0 || policy > 7) return invalid(fmt::format("aclrtMalloc policy {}", policy));
  *devPtr = standin::device_alloc(size);
  if (*devPtr == nullptr) return opgate::acl::kErrorBadAlloc;
  standin::trace(fmt::format("aclrtMalloc {} policy={}", size, policy));
  return 0;
}

aclError aclrtFree(void* devPtr) {
  if (int rc = standin::require_context("aclrtFree", true)) return rc;
  if (auto writer = standin::pending_writer(devPtr, 1)) {
    return invalid(fmt::format("aclrtFree of memory a queued {} still writes", *writer));
  }
  if (!standin::device_free(devPtr)) return invalid("aclrtFree of an address aclrtMalloc did not return");
  return 0;
}

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, int32_t kind) {
  if (int rc = standin::require_context("aclrtMemcpy", true)) return rc;
  if (auto code = standin::injected_failure("aclrtMemcpy", kInjected)) return *code;
  // Per direction too: OPGATE_STANDIN_FAIL=aclrtMemcpyHostToDevice or aclrtMemcpyDeviceToHost.
  const char* direction = kind == opgate::acl::kMemcpyHostToDevice   ? "aclrtMemcpyHostToDevice"
                          : kind == opgate::acl::kMemcpyDeviceToHost ? "aclrtMemcpyDeviceToHost"
                                                                     : "aclrtMemcpyOther";
  if (auto code = standin::injected_failure(direction, kInjected)) return *code;
  if (count > destMax) return invalid(fmt::format("aclrtMemcpy count {} > destMax {}", count, destMax));
  if (dst == nullptr || src == nullptr) return invalid("aclrtMemcpy with a NULL address");
  const bool dst_device = kind == opgate::acl::kMemcpyHostToDevice || kind == opgate::acl::kMemcpyDeviceToDevice;
  const bool src_device = kind == opgate::acl::kMemcpyDeviceToHost || kind == opgate::acl::kMemcpyDeviceToDevice;
  if (kind < 0 || kind > 3) return invalid(fmt::format("aclrtMemcpy kind {}", kind));
  if (dst_device ? !standin::device_range(dst, count) : standin::touches_device(dst, count)) {
    return invalid(fmt::format("aclrtMemcpy kind {}: destination is {}device memory", kind, dst_device ? "not " : ""));
  }
  if (src_device ? !standin::device_range(src, count) : standin::touches_device(src, count)) {
    return invalid(fmt::format("aclrtMemcpy kind {}: source is {}device memory", kind, src_device ? "not " : ""));
  }
  if (src_device) {
    if (auto writer = standin::pending_writer(src, count)) {
      return invalid(fmt::format("aclrtMemcpy reads device memory a queued {} has not written yet (synchronise "
                                 "the stream first)",
                                 *writer));
    }
  }
  if (count > 0) std::memmove(dst, src, count);
  standin::trace(fmt::format("aclrtMemcpy {} kind={}", count, kind));
  return 0;
}

aclError aclrtCtxSetSysParamOpt(int32_t opt, int64_t value) {
  if (int rc = standin::require_context("aclrtCtxSetSysParamOpt", true)) return rc;
  if (auto code = standin::injected_failure("aclrtCtxSetSysParamOpt", kInjected)) return *code;
  if (opt < 0 || opt > 3 || (opt == opgate::acl::kOptDeterministic && (value < 0 || value > 3))) {
    return invalid(fmt::format("aclrtCtxSetSysParamOpt({}, {})", opt, value));
  }
  if (opt == opgate::acl::kOptDeterministic) state().ctx_deterministic = value;
  standin::trace(fmt::format("aclrtCtxSetSysParamOpt {} {}", opt, value));
  return 0;
}

aclError aclrtSetSysParamOpt(int32_t opt, int64_t value) {
  if (int rc = standin::require_context("aclrtSetSysParamOpt", false)) return rc;
  if (opt < 0 || opt > 3 || (opt == opgate::acl::kOptDeterministic && (value < 0 || value > 3))) {
    return invalid(fmt::format("aclrtSetSysParamOpt({}, {})", opt, value));
  }
  if (opt == opgate::acl::kOptDeterministic) state().process_deterministic = value;
  standin::trace(fmt::format("aclrtSetSysParamOpt {} {}", opt, value));
  return 0;
}

const char* aclrtGetSocName(void) {
  if (standin::require_context("aclrtGetSocName", false) != 0) return nullptr;
  static const std::string soc = standin::env("OPGATE_STANDIN_SOC", "Ascend910B3");
  return soc.c_str();
}

aclError aclsysGetCANNVersion(int32_t name, aclCANNPackageVersion* version) {
  if (version == nullptr || name != opgate::acl::kPackageCann) return invalid("aclsysGetCANNVersion arguments");
  *version = aclCANNPackageVersion{};
  const std::string v = standin::env("OPGATE_STANDIN_CANN_VERSION", "8.3.RC1.standin");
  std::strncpy(version->version, v.c_str(), sizeof version->version - 1);
  return 0;
}
