// CPU emulation of the A2/A3 aclnnFfnWorkerBatching kernel (spec routing-ops.md §1.4, §1.5): fp32
// mask test, the NORM and RECV paths, the single-core and multi-core group listers, and a
// catalogue of named kernel defects the fault backend can inject.
#pragma once

#include <string>
#include <vector>

#include "core/defect.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/ffn_worker_batching.h"

namespace opgate::emu::ffn_worker_batching {

// Runs the kernel model on the packed images `in` (scheduleContext with pointers 0, tokenInfoBuf,
// tokenDataBuf, and in NORM mode sessionIdsBuf, microBatchIdsBuf, expertIdsBuf) and writes into the
// pre-allocated `out` images. Device pointers are bound to the emu's buffer handles; in RECV mode
// scheduleContext and tokenInfoBuf are first copied into their output images and updated there.
// Elements the kernel leaves unwritten keep their contents. `defect` is "" or a name from
// defects(); an unknown name is an internal error. A RECV case whose flags are not all 1 would hang
// a real kernel: kInvalidCase.
Status run(const ref::ffn_worker_batching::Params& p, const TensorMap& in, TensorMap& out,
           const std::string& defect);

// The injectable defects, each named "fwb.<what>" with a one-line description.
std::vector<DefectInfo> defects();

}  // namespace opgate::emu::ffn_worker_batching
