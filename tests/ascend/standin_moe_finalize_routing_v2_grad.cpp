// Stand-in aclnnMoeFinalizeRoutingV2Grad: the descriptors and attributes the caller passed become
// the reference's Params and SpecMap (so `validate` judges exactly what arrived), and the kernel
// is opgate's emulator of the A2/A3 kernel.
#include <type_traits>

#include "device/ascend/moe_finalize_routing_v2_grad.h"
#include "device/emu/moe_finalize_routing_v2_grad.h"
#include "reference/moe_finalize_routing_v2_grad.h"
#include "standin_ops.h"

namespace mfrg = opgate::ref::moe_finalize_routing_v2_grad;

STANDIN_API aclnnStatus aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
    const aclTensor* gradY, const aclTensor* expandedRowIdx, const aclTensor* expandedXOptional,
    const aclTensor* scalesOptional, const aclTensor* expertIdxOptional, const aclTensor* biasOptional,
    int64_t dropPadMode, int64_t activeNum, int64_t expertNum, int64_t expertCapacity,
    const aclTensor* gradExpandedXOut, const aclTensor* gradScalesOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);
STANDIN_API aclnnStatus aclnnMoeFinalizeRoutingV2Grad(void* workspace, uint64_t workspaceSize,
                                                      aclOpExecutor* executor, aclrtStream stream);
// The stand-in is built against the very prototypes the backend calls through.
static_assert(std::is_same_v<decltype(&aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize),
                             opgate::ascend::moe_finalize_routing_v2_grad::GetWorkspaceSizeFn>);
static_assert(std::is_same_v<decltype(&aclnnMoeFinalizeRoutingV2Grad), AclnnLaunchFn>);

aclnnStatus aclnnMoeFinalizeRoutingV2GradGetWorkspaceSize(
    const aclTensor* gradY, const aclTensor* expandedRowIdx, const aclTensor* expandedXOptional,
    const aclTensor* scalesOptional, const aclTensor* expertIdxOptional, const aclTensor* biasOptional,
    int64_t dropPadMode, int64_t activeNum, int64_t expertNum, int64_t expertCapacity,
    const aclTensor* gradExpandedXOut, const aclTensor* gradScalesOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  standin::OpCall call("aclnnMoeFinalizeRoutingV2Grad");
  call.input("gradY", gradY);
  call.input("expandedRowIdx", expandedRowIdx);
  call.input("expandedXOptional", expandedXOptional);
  call.input("scalesOptional", scalesOptional);
  call.input("expertIdxOptional", expertIdxOptional);
  call.input("biasOptional", biasOptional);
  call.output("gradExpandedXOut", gradExpandedXOut);
  call.output("gradScalesOut", gradScalesOut);
  const std::pair<const char*, int64_t> attrs[] = {
      {"dropPadMode", dropPadMode}, {"activeNum", activeNum}, {"expertNum", expertNum}, {"expertCapacity", expertCapacity}};
  for (const auto& [name, v] : attrs) call.attr(name, std::to_string(v));
  if (aclnnStatus rc = call.check()) return rc;
  // Params from what arrived: dimensions from the descriptors, attributes verbatim.
  const opgate::SpecMap& s = call.specs();
  const opgate::TensorSpec& gy = s.at("gradY");
  const opgate::TensorSpec& sc = s.at("scalesOptional");
  mfrg::Params p;
  p.dtype = gy.present ? gy.dtype : opgate::DType::kF32;
  p.num_rows = gy.present && !gy.shape.empty() ? gy.shape[0] : 0;
  p.hidden = gy.present && gy.shape.size() > 1 ? gy.shape[1] : 0;
  p.has_scales = sc.present;
  p.top_k = sc.present && sc.shape.size() == 2 ? sc.shape[1] : 1;
  p.has_bias = s.at("biasOptional").present;
  p.drop_pad_mode = dropPadMode;
  p.active_num = activeNum;
  p.expert_num = expertNum;
  p.expert_capacity = expertCapacity;
  if (opgate::Status st = mfrg::validate(p, s); !st.is_ok()) return call.reject(st, workspaceSize, executor);
  return call.accept(workspaceSize, executor, [p](const opgate::TensorMap& in, opgate::TensorMap& out) {
    return opgate::emu::moe_finalize_routing_v2_grad::run(p, in, out, "");
  });
}

aclnnStatus aclnnMoeFinalizeRoutingV2Grad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream) {
  return standin::launch("aclnnMoeFinalizeRoutingV2Grad", workspace, workspaceSize, executor, stream);
}
