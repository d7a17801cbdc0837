// Marshalling of aclnnIncreFlashAttentionV4: V3's arguments (device/ascend/incre_flash_attention_v3.cpp)
// plus kvPaddingSize, a one-element INT64 device tensor (NULL when the case has none). The V4
// documentation lists Atlas A2 and the Atlas inference series, as V3's does.
#include "device/ascend/incre_flash_attention_v4.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "device/ascend/ascend_call.h"
#include "reference/incre_flash_attention_v4.h"

namespace opgate::ascend::incre_flash_attention_v4 {
namespace {

using Params = ref::incre_flash_attention_v4::Params;

Support supports(const Problem& /*problem*/, const SocInfo& soc, const std::string& /*entry*/) {
  Support s = documented_support(soc, {SocFamily::kA2, SocFamily::kInference310P},
                                 "the aclnnIncreFlashAttentionV4 documentation (docs/IncreFlashAttentionV4.md)");
  if (!s.yes) return s;
  // The 25-parameter V4 prototype ships from CANN 8.0.0 (README "ABI"); an older or unreadable
  // version is not called with it.
  if (cann_at_least(soc.cann_version, 8, 0, 0)) return s;
  return {false, fmt::format("aclnnIncreFlashAttentionV4 is called with its CANN 8.0.0 prototype, and this CANN "
                             "reports version '{}' (before 8.0.0 or unreadable)",
                             soc.cann_version)};
}

aclnnStatus get_workspace_size(const Problem& problem, CallArgs& a) {
  const Params& p4 = problem.params<Params>();
  const auto& p = p4.base;
  std::vector<char> layout(p.input_layout.begin(), p.input_layout.end());
  layout.push_back('\0');
  const aclIntArray* lengths = p.has_actual_seq_lengths ? a.int_array(p.actual_seq_lengths) : nullptr;
  return a.get_workspace_size<GetWorkspaceSizeFn>(
      a.tensor("query"), a.tensor_list("key"), a.tensor_list("value"), a.tensor("pseShift"), a.tensor("attenMask"),
      lengths, a.tensor("dequantScale1"), a.tensor("quantScale1"), a.tensor("dequantScale2"), a.tensor("quantScale2"),
      a.tensor("quantOffset2"), a.tensor("antiquantScale"), a.tensor("antiquantOffset"), a.tensor("blocktable"),
      a.tensor("kvPaddingSize"), p.num_heads, p.scale_value, layout.data(), p.num_key_value_heads, p.block_size,
      p.inner_precise, a.tensor("attentionOut"));
}

}  // namespace

const AscendOp& op() {
  static const AscendOp kOp{{"aclnnIncreFlashAttentionV4"}, supports, get_workspace_size};
  return kOp;
}

}  // namespace opgate::ascend::incre_flash_attention_v4
