// The operator side of the stand-in (libopapi_*.so): what every forwarded aclnn call shares. The
// first phase records the argument descriptors as opgate SpecMaps (so the reference's `validate`
// judges exactly what the caller passed), the second phase queues a kernel that reads the device
// tensors through their strides, runs opgate's emulator and writes the outputs back.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "standin.h"

namespace standin {

// The emulated kernel: packed inputs in, output images (current device contents) updated.
using Kernel = std::function<opgate::Status(const opgate::TensorMap& in, opgate::TensorMap& out)>;

// One device tensor argument as the kernel sees it.
struct View {
  std::string name;
  opgate::DType dtype = opgate::DType::kF32;
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
  uint8_t* data = nullptr;
  bool output = false;
};

// The first phase of one call.
class OpCall {
 public:
  explicit OpCall(std::string op) : op_(std::move(op)) {}

  // Tensor arguments (NULL = absent optional); list members are named name.0, name.1, ...
  void input(const std::string& name, const aclTensor* t) { add(name, t, false); }
  void output(const std::string& name, const aclTensor* t) { add(name, t, true); }
  void input_list(const std::string& name, const aclTensorList* l);
  // The values of an int array argument; `present` is false for NULL.
  std::vector<int64_t> int_array(const std::string& name, const aclIntArray* a, bool* present = nullptr);
  // Scalar attributes, for the trace.
  void attr(const std::string& name, const std::string& value) { attrs_ += " " + name + "=" + value; }

  const opgate::SpecMap& specs() const { return specs_; }
  // The checks every first phase makes: same process as aclInit, a device, ACL_OPT_DETERMINISTIC
  // set to 1 (context and process), an injected failure, valid handles. 0 or the code to return.
  aclnnStatus check();
  // The reference rejected the call: its aclnn code (161002 for any other status), message set.
  // OPGATE_STANDIN_LENIENT=1 plays a device that accepts it anyway (an executor whose kernel fails).
  aclnnStatus reject(const opgate::Status& st, uint64_t* workspace_size, aclOpExecutor** executor);
  // Accepted: the workspace size (OPGATE_STANDIN_WORKSPACE, default 65536) and an executor that
  // runs `kernel` on the views when launched and synchronised.
  aclnnStatus accept(uint64_t* workspace_size, aclOpExecutor** executor, Kernel kernel);

 private:
  void add(const std::string& name, const aclTensor* t, bool output);

  std::string op_;
  std::vector<View> views_;
  opgate::SpecMap specs_;
  std::string problem_;  // the first unusable argument
  std::string attrs_;
};

// The second phase: checks the executor, workspace and stream, and queues the kernel.
aclnnStatus launch(const char* op, void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                   aclrtStream stream);

// Raw device bytes for side buffers reached through pointers inside other buffers: copies
// [address, address + bytes) when it lies in one allocation, else "" error text in `why`.
bool read_device(uint64_t address, size_t bytes, std::vector<uint8_t>& out, std::string& why);
bool write_device(uint64_t address, const uint8_t* bytes, size_t n, std::string& why);

}  // namespace standin
