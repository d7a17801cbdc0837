// Marshalling of aclnnMoeFinalizeRoutingV2Grad: every argument is a dense ND tensor named as in
// ref::specs, absent optionals are NULL, and the four attributes are int64 (spec routing-ops.md
// §3.1). Support: 950PR/DT, A3, A2; not the Atlas inference or training series (§5.2).
#include "device/ascend/moe_finalize_routing_v2_grad.h"

#include "device/ascend/ascend_call.h"
#include "reference/moe_finalize_routing_v2_grad.h"

namespace opgate::ascend::moe_finalize_routing_v2_grad {
namespace {

using Params = ref::moe_finalize_routing_v2_grad::Params;

Support supports(const Problem& /*problem*/, const SocInfo& soc, const std::string& /*entry*/) {
  return documented_support(soc, {SocFamily::kA2, SocFamily::kA3, SocFamily::kAscend950},
                            "the aclnnMoeFinalizeRoutingV2Grad documentation (ascend-abi.md §5.2)");
}

aclnnStatus get_workspace_size(const Problem& problem, CallArgs& a) {
  const Params& p = problem.params<Params>();
  return a.get_workspace_size<GetWorkspaceSizeFn>(
      a.tensor("gradY"), a.tensor("expandedRowIdx"), a.tensor("expandedXOptional"), a.tensor("scalesOptional"),
      a.tensor("expertIdxOptional"), a.tensor("biasOptional"), p.drop_pad_mode, p.active_num, p.expert_num,
      p.expert_capacity, a.tensor("gradExpandedXOut"), a.tensor("gradScalesOut"));
}

}  // namespace

const AscendOp& op() {
  static const AscendOp kOp{{"aclnnMoeFinalizeRoutingV2Grad"}, supports, get_workspace_size};
  return kOp;
}

}  // namespace opgate::ascend::moe_finalize_routing_v2_grad
