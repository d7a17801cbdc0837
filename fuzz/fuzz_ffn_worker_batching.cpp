// libFuzzer target for aclnnFfnWorkerBatching over the shared operator harness (fuzz/op_target.h),
// with the operator's own layout round trips (spec routing-ops.md §1.2, §1.3): the ScheduleContext
// fields survive build -> parse, and the token slots of tokenDataBuf parse back to the canonical
// tokens (and int8 scales).
#include <fmt/format.h>

#include "device/layout/ffn_worker_batching.h"
#include "fuzz/op_target.h"

namespace {

namespace layout = opgate::layout::ffn_worker_batching;

std::string schedule_layout(const opgate::Problem& problem, const opgate::TensorMap& canonical,
                            const opgate::TensorMap& packed) {
  const auto& p = problem.params<layout::Params>();
  const layout::ScheduleContext c = layout::context_of(p);
  if (!(layout::parse_context(layout::build_context(c)) == c)) return "parse_context(build_context(c)) != c";
  const opgate::TensorMap tokens = layout::parse_token_data(p, packed.at("tokenDataBuf"));
  for (const char* name : {"tokens", "tokenScales"}) {
    auto want = canonical.find(name);
    auto got = tokens.find(name);
    if ((want == canonical.end()) != (got == tokens.end())) return fmt::format("'{}' present on one side only", name);
    if (want != canonical.end() && !want->second.bytes_equal(got->second)) {
      return fmt::format("tokenDataBuf does not parse back to the canonical '{}'", name);
    }
  }
  return "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return opgate::fuzz::run_op_target("ffn_worker_batching", data, size, schedule_layout);
}
