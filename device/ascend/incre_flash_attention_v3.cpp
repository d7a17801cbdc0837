// Marshalling of aclnnIncreFlashAttentionV3: key and value as tensor lists (one tensor of batch B,
// one tensor per batch, or one page-attention cache with the block table), actualSeqLengths as a
// host int array, the unused dequant/quant inputs NULL (spec attention-and-ffn.md §1.2). The V3
// documentation lists Atlas A2 and the Atlas inference series only, not A3 or Ascend 950 (§5.4).
#include "device/ascend/incre_flash_attention_v3.h"

#include <string>
#include <vector>

#include "device/ascend/ascend_call.h"
#include "reference/incre_flash_attention_v3.h"

namespace opgate::ascend::incre_flash_attention_v3 {
namespace {

using Params = ref::incre_flash_attention_v3::Params;

Support supports(const Problem& /*problem*/, const SocInfo& soc, const std::string& /*entry*/) {
  return documented_support(soc, {SocFamily::kA2, SocFamily::kInference310P},
                            "the aclnnIncreFlashAttentionV3 documentation (seed 003, ascend-abi.md §5.4)");
}

aclnnStatus get_workspace_size(const Problem& problem, CallArgs& a) {
  const Params& p = problem.params<Params>();
  // The layout string travels as a mutable char* in the prototype; the call does not write it.
  std::vector<char> layout(p.input_layout.begin(), p.input_layout.end());
  layout.push_back('\0');
  const aclIntArray* lengths = p.has_actual_seq_lengths ? a.int_array(p.actual_seq_lengths) : nullptr;
  return a.get_workspace_size<GetWorkspaceSizeFn>(
      a.tensor("query"), a.tensor_list("key"), a.tensor_list("value"), a.tensor("pseShift"), a.tensor("attenMask"),
      lengths, a.tensor("dequantScale1"), a.tensor("quantScale1"), a.tensor("dequantScale2"), a.tensor("quantScale2"),
      a.tensor("quantOffset2"), a.tensor("antiquantScale"), a.tensor("antiquantOffset"), a.tensor("blocktable"),
      p.num_heads, p.scale_value, layout.data(), p.num_key_value_heads, p.block_size, p.inner_precise,
      a.tensor("attentionOut"));
}

}  // namespace

const AscendOp& op() {
  static const AscendOp kOp{{"aclnnIncreFlashAttentionV3"}, supports, get_workspace_size};
  return kOp;
}

}  // namespace opgate::ascend::incre_flash_attention_v3
