// Marshalling of aclnnMoeFFN / aclnnFFN: dense ND tensors named as in ref::specs, expertTokens as a
// host int array (NULL when the case says so), activation as a C string. aclnnFFN is documented
// for Atlas A2 only (ascend-abi.md §5.5); the legacy aclnnMoeFFN documents no table and is held to
// the same. aclnnMoeFFN has no innerPrecise, BF16 or activation other than fastgelu (seed 004), and
// its rejection codes are documented only in part, so such cases and rejection probes are SKIPPED
// on that entry. Which fp16 kernel it runs (issue 22's audit): it passes no innerPrecise, the FFN
// op's attribute defaults to 0 = high precision (hicann/ops-transformer ffn/ffn/op_host/ffn_def.cpp),
// and the tiling takes the high-precision key 3 when the attribute is absent (ffn_tiling.cpp,
// the innerPrecise read before SelectTilingKey). So an fp16 case runs there only as innerPrecise 0;
// int8 has one kernel whatever the attribute (the quant keys ignore it).
#include "device/ascend/moe_ffn.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "device/ascend/ascend_call.h"
#include "reference/moe_ffn.h"

namespace opgate::ascend::moe_ffn {
namespace {

using Params = ref::moe_ffn::Params;
constexpr const char* kLegacy = "aclnnMoeFFN";

Support supports(const Problem& problem, const SocInfo& soc, const std::string& entry) {
  Support s = documented_support(soc, {SocFamily::kA2}, "the aclnnFFN documentation (ascend-abi.md §5.5)");
  if (!s.yes) return s;
  // aclnnFFN gained the four antiquant tensors (19 parameters) in CANN 8.0.0; the older 13-parameter
  // form would receive every argument after deqScale2 shifted. Only a CANN that says it is 8.0.0 or
  // newer gets the 19-parameter call.
  if (entry != kLegacy) {
    if (cann_at_least(soc.cann_version, 8, 0, 0)) return s;
    return {false, fmt::format("aclnnFFN is called with its 19-parameter CANN 8.0.0 prototype, and this CANN reports "
                               "version '{}' (before 8.0.0 or unreadable), where aclnnFFN had 13 parameters and "
                               "aclnnMoeFFN is not exported",
                               soc.cann_version)};
  }
  const Params& p = problem.params<Params>();
  if (!problem.validate().is_ok()) {
    return {false, "the reference's rejection codes follow aclnnFFN (spec §2.9); this CANN serves the legacy "
                   "aclnnMoeFFN, whose codes are documented only in part"};
  }
  const bool fp16_default = p.dtype != DType::kF16 || p.inner_precise == 0;
  if (!fp16_default || p.dtype == DType::kBF16 || p.y_dtype == DType::kBF16 || p.activation != "fastgelu") {
    return {false, fmt::format("this CANN serves the legacy aclnnMoeFFN, which has only the fp16/int8 fastgelu "
                               "paths with fp16 y, fp16 at the attribute's default innerPrecise = 0 (the case asks "
                               "for x {}, y {}, {}, innerPrecise {})",
                               dtype_name(p.dtype), dtype_name(p.y_dtype), p.activation, p.inner_precise)};
  }
  return s;
}

aclnnStatus get_workspace_size(const Problem& problem, CallArgs& a) {
  const Params& p = problem.params<Params>();
  std::vector<char> activation(p.activation.begin(), p.activation.end());
  activation.push_back('\0');
  const aclIntArray* tokens = p.expert_tokens_null ? nullptr : a.int_array(p.expert_tokens);
  if (a.entry() == kLegacy) {
    return a.get_workspace_size<MoeFfnGetWorkspaceSizeFn>(
        a.tensor("x"), tokens, a.tensor("weight1"), a.tensor("bias1"), a.tensor("weight2"), a.tensor("bias2"),
        a.tensor("scale"), a.tensor("offset"), a.tensor("deqScale1"), a.tensor("deqScale2"), activation.data(),
        a.tensor("y"));
  }
  return a.get_workspace_size<FfnGetWorkspaceSizeFn>(
      a.tensor("x"), a.tensor("weight1"), a.tensor("weight2"), tokens, a.tensor("bias1"), a.tensor("bias2"),
      a.tensor("scale"), a.tensor("offset"), a.tensor("deqScale1"), a.tensor("deqScale2"), nullptr, nullptr, nullptr,
      nullptr, activation.data(), p.inner_precise, a.tensor("y"));
}

}  // namespace

const AscendOp& op() {
  static const AscendOp kOp{{kLegacy, "aclnnFFN"}, supports, get_workspace_size};
  return kOp;
}

}  // namespace opgate::ascend::moe_ffn
