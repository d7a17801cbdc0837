// The device backend interface (DESIGN.md §4): emu (CPU emulation of the kernels), fault (emu with
// one injected defect) and ascend (the real aclnn kernels, loaded at run time).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/defect.h"
#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate {

struct Support {
  bool yes = true;
  std::string reason;  // why not (SKIPPED verdict)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Device facts recorded in reports (SoC, versions, which library serves each op).
  virtual nlohmann::json probe() const = 0;
  virtual Support supports(const Problem& problem) const = 0;
  // Runs the kernel: reads the packed input images, writes into the pre-allocated (poisoned)
  // output images. kBackendError carries the device's code and message.
  virtual Status run(const Problem& problem, const TensorMap& inputs, TensorMap& outputs) = 0;
  // For rejected calls on a real device: the code its GetWorkspaceSize returns (0 = accepted).
  // Emulators return the reference's code, so they never disagree. kUnsupported: no probe for this
  // call (the case is SKIPPED).
  virtual Expected<int64_t> rejection_code(const Problem& problem) = 0;
  // Findings of the runs since the last call that do not fail a case (e.g. a device kernel writing
  // into the alignment slack CANN allows after an output); the runner records them in the result.
  virtual std::vector<std::string> take_warnings() { return {}; }
};

}  // namespace opgate
