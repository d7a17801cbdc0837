// One aclnn call on the device: the arguments an operator's marshalling asks for (tensors from
// the packed images, tensor lists, int arrays, raw device addresses), the two-phase launch, and
// the copies back with guard and input checks (spec ascend-abi.md §4 two-phase pattern, §9 step 5).
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/problem.h"
#include "device/ascend/acl_handles.h"
#include "device/ascend/ascend_op.h"
#include "device/ascend/ascend_session.h"

namespace opgate::ascend {

// The symbols of one resolved aclnn entry point.
struct ResolvedEntry {
  std::string name;                 // "aclnnMoeFinalizeRoutingV2Grad"
  void* get_workspace_size = nullptr;
  void* launch = nullptr;
  std::string library;              // the file that defines it
};

// Guard bytes around every output on the device: a kernel writing past its output lands in them.
constexpr size_t kDeviceGuardBytes = 256;
// CANN lets a kernel touch up to ALIGN_UP(len, 32) + 32 bytes of an allocation of len bytes (its
// vector units move whole 32-byte blocks): writes there are a warning, writes beyond an error.
constexpr size_t kDeviceBlockBytes = 32;
// Bytes after an output of `len` bytes that a kernel may touch: ALIGN_UP(len, 32) + 32 - len.
constexpr size_t device_slack_bytes(size_t len) {
  return (len + kDeviceBlockBytes - 1) / kDeviceBlockBytes * kDeviceBlockBytes + kDeviceBlockBytes - len;
}
static_assert(device_slack_bytes(1) == 63 && device_slack_bytes(32) == 32 && device_slack_bytes(33) == 63,
              "slack: ALIGN_UP(len, 32) + 32 - len");
static_assert(device_slack_bytes(31) < kDeviceGuardBytes, "the guards must reach past the slack");

// The arguments of one call, owned until the call's results are back. In run mode they come from
// the packed input images and the (poisoned) output images; in descriptor mode (rejection probes)
// from the specs alone, with zero-filled device memory.
class CallArgs {
 public:
  CallArgs(const AclApi& api, const ResolvedEntry& entry, const SpecMap& specs, const TensorMap* inputs,
           TensorMap* outputs);
  CallArgs(const CallArgs&) = delete;
  CallArgs& operator=(const CallArgs&) = delete;

  const std::string& entry() const { return entry_.name; }
  bool run_mode() const { return outputs_ != nullptr; }

  // The argument `name` (an entry of the specs) as an aclTensor; nullptr when the specs mark it
  // absent (an optional argument passed as NULL) or after an earlier failure.
  const aclTensor* tensor(const std::string& name);
  // The tensor list `name`: the specs' entries name.0, name.1, ... (an absent entry is a NULL
  // member), or `name` alone as a list of one; nullptr when no member is present.
  const aclTensorList* tensor_list(const std::string& name);
  // A host int array (values copied by nnopbase).
  const aclIntArray* int_array(const std::vector<int64_t>& values);
  // The device address of image `name` (uploaded on first use), for pointers that travel inside
  // other buffers; 0 in descriptor mode or when the image does not exist.
  uint64_t address(const std::string& name);
  // A private copy of image `name` to patch before it is uploaded (e.g. device pointers written
  // into a context); nullptr in descriptor mode, when absent, or once uploaded.
  Tensor* patch(const std::string& name);

  // Calls the first phase with `args` followed by &workspaceSize and &executor, unless an argument
  // failed (then it returns -1 without calling; status() says why).
  template <class Fn, class... A>
  aclnnStatus get_workspace_size(A... args) {
    if (!status_.is_ok()) return -1;
    Fn fn = nullptr;
    static_assert(sizeof(fn) == sizeof(entry_.get_workspace_size), "function pointer size");
    std::memcpy(&fn, &entry_.get_workspace_size, sizeof(fn));
    called_ = true;
    return fn(args..., &workspace_size_, &executor_);
  }

  const Status& status() const { return status_; }
  bool called() const { return called_; }
  uint64_t workspace_size() const { return workspace_size_; }
  aclOpExecutor* executor() const { return executor_; }

  // After the stream is synchronised: copies every output back into its host image (guards
  // checked), and checks that every input came back unchanged and that every output image was
  // passed to the call. Writes into an output's alignment slack are added to `warnings`.
  Status collect(std::vector<std::string>* warnings);

 private:
  struct Image {
    DeviceBuffer buffer;
    size_t body_offset = 0;  // guard bytes before the body (outputs)
    size_t body_bytes = 0;
    bool output = false;
    const Tensor* host = nullptr;  // what was uploaded
  };
  // The uploaded image `name`, uploading it on first use; nullptr (status_ set) on failure.
  Image* image(const std::string& name);
  const TensorSpec* spec(const std::string& name);
  void fail(Status st);

  const AclApi& api_;
  const ResolvedEntry& entry_;
  const SpecMap& specs_;
  const TensorMap* inputs_;
  TensorMap* outputs_;
  Status status_;
  std::map<std::string, Tensor> patched_;
  // Declared before the handles, so every handle is destroyed before the memory it describes.
  std::map<std::string, Image> images_;
  std::vector<TensorHandle> tensors_;
  std::vector<TensorListHandle> lists_;
  std::vector<IntArrayHandle> arrays_;
  bool called_ = false;
  uint64_t workspace_size_ = 0;
  aclOpExecutor* executor_ = nullptr;
};

// Runs `problem` through `op` on the session's device: GetWorkspaceSize, workspace, launch,
// synchronise, copy back. kBackendError names the failing call, its code and the runtime's message.
// Findings that do not fail the call (writes into an output's alignment slack) go to `warnings`.
Status run_call(DeviceSession& session, const AscendOp& op, const ResolvedEntry& entry, const Problem& problem,
                const TensorMap& inputs, TensorMap& outputs, std::vector<std::string>* warnings);
// The code GetWorkspaceSize returns for `problem`'s descriptors (0 = accepted).
Expected<int64_t> probe_rejection(DeviceSession& session, const AscendOp& op, const ResolvedEntry& entry,
                                  const Problem& problem);

}  // namespace opgate::ascend
