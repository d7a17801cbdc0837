// Stand-in aclnnFFN (with expertTokens = MoeFFN), or with OPGATE_STANDIN_MOE_FFN_LEGACY the legacy
// aclnnMoeFFN: the descriptors, the expertTokens array and the attributes become the reference's
// Params and SpecMap; the kernel is opgate's emulator.
#include <type_traits>

#include "device/ascend/moe_ffn.h"
#include "device/emu/moe_ffn.h"
#include "reference/moe_ffn.h"
#include "standin_ops.h"

namespace mffn = opgate::ref::moe_ffn;

namespace {

// Params from what arrived: dimensions from x (M tokens in its leading dims, K1) and weight1 (E, K1, N1), dtypes from the
// descriptors, expertTokens and the attributes verbatim.
mffn::Params params_of(const opgate::SpecMap& s, const std::vector<int64_t>& tokens, bool tokens_present,
                       const char* activation, int64_t inner_precise) {
  mffn::Params p;
  const opgate::TensorSpec& x = s.at("x");
  const opgate::TensorSpec& w1 = s.at("weight1");
  p.expert_tokens = tokens;
  p.expert_tokens_null = !tokens_present;
  p.dtype = x.present ? x.dtype : opgate::DType::kF16;
  p.y_dtype = s.at("y").present ? s.at("y").dtype : p.dtype;
  if (s.at("deqScale1").present) p.deq_dtype = s.at("deqScale1").dtype;
  // x of rank 2..8 (spec F5): the tokens are its leading dims.
  p.m = 0;
  if (x.present && !x.shape.empty()) {
    p.m = 1;
    for (size_t d = 0; d + 1 < x.shape.size(); ++d) p.m *= x.shape[d];
  }
  p.k1 = x.present && !x.shape.empty() ? x.shape.back() : 0;
  p.n1 = w1.present && !w1.shape.empty() ? w1.shape.back() : 0;
  p.activation = activation == nullptr ? "" : activation;
  p.inner_precise = inner_precise;
  p.has_bias1 = s.at("bias1").present;
  p.has_bias2 = s.at("bias2").present;
  p.per_channel_scale = s.at("scale").present && s.at("scale").shape.size() == 2;
  return p;
}

aclnnStatus finish(standin::OpCall& call, const mffn::Params& p, uint64_t* workspaceSize, aclOpExecutor** executor) {
  if (opgate::Status st = mffn::validate(p, call.specs()); !st.is_ok()) return call.reject(st, workspaceSize, executor);
  return call.accept(workspaceSize, executor, [p](const opgate::TensorMap& in, opgate::TensorMap& out) {
    return opgate::emu::moe_ffn::run(p, in, out, "");
  });
}

}  // namespace

#ifdef OPGATE_STANDIN_MOE_FFN_LEGACY

STANDIN_API aclnnStatus aclnnMoeFFNGetWorkspaceSize(const aclTensor* x, const aclIntArray* expertTokens,
                                                    const aclTensor* weight1, const aclTensor* bias1,
                                                    const aclTensor* weight2, const aclTensor* bias2,
                                                    const aclTensor* scale, const aclTensor* offset,
                                                    const aclTensor* deqScale1, const aclTensor* deqScale2,
                                                    char* activation, const aclTensor* y, uint64_t* workspaceSize,
                                                    aclOpExecutor** executor);
STANDIN_API aclnnStatus aclnnMoeFFN(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                    aclrtStream stream);
static_assert(std::is_same_v<decltype(&aclnnMoeFFNGetWorkspaceSize),
                             opgate::ascend::moe_ffn::MoeFfnGetWorkspaceSizeFn>);

aclnnStatus aclnnMoeFFNGetWorkspaceSize(const aclTensor* x, const aclIntArray* expertTokens, const aclTensor* weight1,
                                        const aclTensor* bias1, const aclTensor* weight2, const aclTensor* bias2,
                                        const aclTensor* scale, const aclTensor* offset, const aclTensor* deqScale1,
                                        const aclTensor* deqScale2, char* activation, const aclTensor* y,
                                        uint64_t* workspaceSize, aclOpExecutor** executor) {
  standin::OpCall call("aclnnMoeFFN");
  bool present = false;
  const std::vector<int64_t> tokens = call.int_array("expertTokens", expertTokens, &present);
  const std::pair<const char*, const aclTensor*> inputs[] = {
      {"x", x},         {"weight1", weight1}, {"bias1", bias1},         {"weight2", weight2}, {"bias2", bias2},
      {"scale", scale}, {"offset", offset},   {"deqScale1", deqScale1}, {"deqScale2", deqScale2}};
  for (const auto& [name, t] : inputs) call.input(name, t);
  call.output("y", y);
  call.attr("activation", activation == nullptr ? "NULL" : activation);
  if (aclnnStatus rc = call.check()) return rc;
  // The legacy entry passes no innerPrecise: the FFN attribute's default 0 (high precision) runs
  // (device/ascend/moe_ffn.cpp, issue 22's audit).
  return finish(call, params_of(call.specs(), tokens, present, activation, 0), workspaceSize, executor);
}

aclnnStatus aclnnMoeFFN(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return standin::launch("aclnnMoeFFN", workspace, workspaceSize, executor, stream);
}

#else

STANDIN_API aclnnStatus aclnnFFNGetWorkspaceSize(
    const aclTensor* x, const aclTensor* weight1, const aclTensor* weight2, const aclIntArray* expertTokens,
    const aclTensor* bias1, const aclTensor* bias2, const aclTensor* scale, const aclTensor* offset,
    const aclTensor* deqScale1, const aclTensor* deqScale2, const aclTensor* antiquantScale1,
    const aclTensor* antiquantScale2, const aclTensor* antiquantOffset1, const aclTensor* antiquantOffset2,
    const char* activation, int64_t innerPrecise, const aclTensor* y, uint64_t* workspaceSize,
    aclOpExecutor** executor);
STANDIN_API aclnnStatus aclnnFFN(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                 aclrtStream stream);
static_assert(std::is_same_v<decltype(&aclnnFFNGetWorkspaceSize), opgate::ascend::moe_ffn::FfnGetWorkspaceSizeFn>);
static_assert(std::is_same_v<decltype(&aclnnFFN), AclnnLaunchFn>);

aclnnStatus aclnnFFNGetWorkspaceSize(const aclTensor* x, const aclTensor* weight1, const aclTensor* weight2,
                                     const aclIntArray* expertTokens, const aclTensor* bias1, const aclTensor* bias2,
                                     const aclTensor* scale, const aclTensor* offset, const aclTensor* deqScale1,
                                     const aclTensor* deqScale2, const aclTensor* antiquantScale1,
                                     const aclTensor* antiquantScale2, const aclTensor* antiquantOffset1,
                                     const aclTensor* antiquantOffset2, const char* activation, int64_t innerPrecise,
                                     const aclTensor* y, uint64_t* workspaceSize, aclOpExecutor** executor) {
  standin::OpCall call("aclnnFFN");
  bool present = false;
  const std::vector<int64_t> tokens = call.int_array("expertTokens", expertTokens, &present);
  const std::pair<const char*, const aclTensor*> inputs[] = {
      {"x", x},         {"weight1", weight1}, {"bias1", bias1},         {"weight2", weight2}, {"bias2", bias2},
      {"scale", scale}, {"offset", offset},   {"deqScale1", deqScale1}, {"deqScale2", deqScale2}};
  for (const auto& [name, t] : inputs) call.input(name, t);
  call.output("y", y);
  call.attr("activation", activation == nullptr ? "NULL" : activation);
  call.attr("innerPrecise", std::to_string(innerPrecise));
  if (aclnnStatus rc = call.check()) return rc;
  // opgate's MoeFFN never uses the weight-antiquant path; arriving tensors there are a marshalling error.
  for (const aclTensor* t : {antiquantScale1, antiquantScale2, antiquantOffset1, antiquantOffset2}) {
    if (t != nullptr) {
      return call.reject(opgate::aclnn_error(161002, "an antiquant tensor is not NULL"), workspaceSize, executor);
    }
  }
  return finish(call, params_of(call.specs(), tokens, present, activation, innerPrecise), workspaceSize, executor);
}

aclnnStatus aclnnFFN(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return standin::launch("aclnnFFN", workspace, workspaceSize, executor, stream);
}

#endif
