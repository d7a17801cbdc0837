// Stand-in aclnnIncreFlashAttentionV3: the reference's Params are rebuilt from what arrived — the
// attributes verbatim, the KV form from the tensor lists and the block table, the dimensions and
// the quantisation forms from the descriptors (spec attention-and-ffn.md §1.2) — so `validate` and
// the emulator see exactly the caller's call.
#include <type_traits>

#include <fmt/format.h>

#include "device/ascend/incre_flash_attention_v3.h"
#include "device/emu/incre_flash_attention_v3.h"
#include "reference/incre_flash_attention_v3.h"
#include "standin_incre_flash_attention_v3.h"
#include "standin_ops.h"

namespace ifa = opgate::ref::incre_flash_attention_v3;
using opgate::Shape;
using opgate::TensorSpec;

STANDIN_API aclnnStatus aclnnIncreFlashAttentionV3GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blocktable, int64_t numHeads, double scaleValue, char* inputLayout, int64_t numKeyValueHeads,
    int64_t blockSize, int64_t innerPrecise, const aclTensor* attentionOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);
STANDIN_API aclnnStatus aclnnIncreFlashAttentionV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream);
static_assert(std::is_same_v<decltype(&aclnnIncreFlashAttentionV3GetWorkspaceSize),
                             opgate::ascend::incre_flash_attention_v3::GetWorkspaceSizeFn>);
static_assert(std::is_same_v<decltype(&aclnnIncreFlashAttentionV3), AclnnLaunchFn>);

namespace {

const TensorSpec* present(const opgate::SpecMap& s, const std::string& name) {
  const auto it = s.find(name);
  return it == s.end() || !it->second.present ? nullptr : &it->second;
}

int64_t dim(const TensorSpec* t, size_t i) { return t != nullptr && i < t->shape.size() ? t->shape[i] : 0; }

// The S axis of a BSH / BSND (1) or BNSD (2) tensor.
int64_t seq_axis(const std::string& layout) { return layout == "BNSD" ? 2 : 1; }

// The documented antiquant shape names (§1.2) from a descriptor.
std::string antiquant_shape(const Shape& s, int64_t n2) {
  if (s.size() == 1) return "2";
  if (s.size() == 2) return "2H";
  if (s.size() == 3) return "2ND";
  return s.size() == 4 && s[1] == 1 && s[2] == n2 ? "21ND" : "2N1D";
}

std::string quant_shape(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  if (s.size() == 1) return n == 1 ? "1" : "H";
  if (s.size() == 2) return s[0] == 1 ? "1H" : "ND";
  if (s.size() == 3) return s[0] == 1 && s[1] == 1 ? "11H" : (s[1] == 1 ? "N1D" : "1ND");
  return s.size() == 4 && s[1] == 1 && s[2] != 1 ? "11ND" : "1N1D";
}

}  // namespace

ifa::Params standin_ifa::params_of(const opgate::SpecMap& s, size_t kv_members, const std::vector<int64_t>& lengths,
                      bool has_lengths, int64_t heads, double scale, const std::string& layout, int64_t kv_heads,
                      int64_t block_size, int64_t inner_precise) {
  ifa::Params p;
  p.num_heads = heads;
  p.scale_value = scale;
  p.input_layout = layout;
  p.num_key_value_heads = kv_heads;
  p.block_size = block_size;
  p.inner_precise = inner_precise;
  p.has_actual_seq_lengths = has_lengths;
  p.actual_seq_lengths = lengths;
  const TensorSpec* q = present(s, "query");
  const TensorSpec* k0 = present(s, "key.0");
  const TensorSpec* out = present(s, "attentionOut");
  const int64_t n2 = ifa::kv_heads(p);
  if (q != nullptr) p.dtype = q->dtype;
  if (k0 != nullptr) p.kv_dtype = k0->dtype;
  if (out != nullptr) p.out_dtype = out->dtype;
  p.batch = dim(q, 0);
  p.head_dim = layout == "BSH" ? (heads > 0 ? dim(q, 2) / heads : 0) : dim(q, 3);
  if (const TensorSpec* table = present(s, "blocktable")) {
    p.kv_cache = k0 != nullptr && k0->shape.size() == 4 ? ifa::KvCache::kPaged4d : ifa::KvCache::kPaged3d;
    p.block_num = dim(k0, 0);
    p.max_block_num_per_seq = dim(table, 1);
  } else if (kv_members == 1 && dim(k0, 0) == p.batch) {
    p.kv_cache = ifa::KvCache::kTensor;
    p.seq = dim(k0, static_cast<size_t>(seq_axis(layout)));
  } else {
    p.kv_cache = ifa::KvCache::kList;
    for (size_t b = 0; b < kv_members; ++b) {
      p.kv_seq_lens.push_back(dim(present(s, fmt::format("key.{}", b)), static_cast<size_t>(seq_axis(layout))));
    }
  }
  if (const TensorSpec* pse = present(s, "pseShift")) {
    p.has_pse = true;
    p.pse_batch = dim(pse, 0);
    p.pse_seq = pse->shape.empty() ? 0 : pse->shape.back();
  }
  if (const TensorSpec* mask = present(s, "attenMask")) {
    p.has_mask = true;
    p.mask_dtype = mask->dtype;
    p.mask_rank = static_cast<int64_t>(mask->shape.size());
    p.mask_seq = mask->shape.empty() ? 0 : mask->shape.back();
  }
  if (const TensorSpec* aq = present(s, "antiquantScale")) {
    p.antiquant = aq->shape.size() == 1 ? ifa::QuantMode::kPerTensor : ifa::QuantMode::kPerChannel;
    p.antiquant_shape = antiquant_shape(aq->shape, n2);
    p.has_antiquant_offset = present(s, "antiquantOffset") != nullptr;
  }
  if (const TensorSpec* qs = present(s, "quantScale2")) {
    p.quant_shape = quant_shape(qs->shape);
    p.quant = p.quant_shape == "1" ? ifa::QuantMode::kPerTensor : ifa::QuantMode::kPerChannel;
    p.quant_dtype = qs->dtype;
    p.has_quant_offset = present(s, "quantOffset2") != nullptr;
  }
  return p;
}

aclnnStatus aclnnIncreFlashAttentionV3GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blocktable, int64_t numHeads, double scaleValue, char* inputLayout, int64_t numKeyValueHeads,
    int64_t blockSize, int64_t innerPrecise, const aclTensor* attentionOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  standin::OpCall call("aclnnIncreFlashAttentionV3");
  call.input("query", query);
  call.input_list("key", key);
  call.input_list("value", value);
  const std::pair<const char*, const aclTensor*> inputs[] = {
      {"pseShift", pseShift},         {"attenMask", attenMask},           {"dequantScale1", dequantScale1},
      {"quantScale1", quantScale1},   {"dequantScale2", dequantScale2},   {"quantScale2", quantScale2},
      {"quantOffset2", quantOffset2}, {"antiquantScale", antiquantScale}, {"antiquantOffset", antiquantOffset},
      {"blocktable", blocktable}};
  for (const auto& [name, t] : inputs) call.input(name, t);
  call.output("attentionOut", attentionOut);
  bool has_lengths = false;
  const std::vector<int64_t> lengths = call.int_array("actualSeqLengths", actualSeqLengths, &has_lengths);
  const std::string layout = inputLayout == nullptr ? "" : inputLayout;
  call.attr("numHeads", std::to_string(numHeads));
  call.attr("scaleValue", fmt::format("{}", scaleValue));
  call.attr("inputLayout", layout);
  call.attr("numKeyValueHeads", std::to_string(numKeyValueHeads));
  call.attr("blockSize", std::to_string(blockSize));
  call.attr("innerPrecise", std::to_string(innerPrecise));
  if (aclnnStatus rc = call.check()) return rc;
  const size_t members = key != nullptr ? key->tensors.size() : 0;
  const ifa::Params p = standin_ifa::params_of(call.specs(), members, lengths, has_lengths, numHeads, scaleValue, layout,
                                  numKeyValueHeads, blockSize, innerPrecise);
  // validate and the emulator name a one-tensor KV (batch tensor or page cache) key / value.
  opgate::SpecMap specs = call.specs();
  const bool single = p.kv_cache != ifa::KvCache::kList;
  if (single) {
    for (const char* name : {"key", "value"}) {
      if (specs.count(fmt::format("{}.0", name)) != 0) {
        specs[name] = specs.at(fmt::format("{}.0", name));
        specs.erase(fmt::format("{}.0", name));
      }
    }
  }
  if (opgate::Status st = ifa::validate(p, specs); !st.is_ok()) return call.reject(st, workspaceSize, executor);
  return call.accept(workspaceSize, executor, [p, single](const opgate::TensorMap& in, opgate::TensorMap& out) {
    opgate::TensorMap images = in;
    if (single) {
      for (const char* name : {"key", "value"}) {
        images[name] = images.at(fmt::format("{}.0", name));
        images.erase(fmt::format("{}.0", name));
      }
    }
    return opgate::emu::incre_flash_attention_v3::run(p, images, out, "");
  });
}

aclnnStatus aclnnIncreFlashAttentionV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream stream) {
  return standin::launch("aclnnIncreFlashAttentionV3", workspace, workspaceSize, executor, stream);
}
