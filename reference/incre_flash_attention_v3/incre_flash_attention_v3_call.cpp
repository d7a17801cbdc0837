// The aclnnIncreFlashAttentionV3 call's descriptors (attention-and-ffn.md §1.2 shapes, §1.3
// effective lengths), the canonical input shapes the reference works on, and the data checks.
#include <algorithm>

#include <fmt/format.h>

#include "reference/incre_flash_attention_v3.h"

namespace opgate::ref::incre_flash_attention_v3 {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

// (B, S, N*D), (B, N, S, D) or (B, S, N, D); an unknown layout (rejected by V6) gives BNSD.
Shape layout_shape(const std::string& layout, int64_t b, int64_t n, int64_t s, int64_t d) {
  if (layout == "BSH") return {b, s, n * d};
  if (layout == "BSND") return {b, s, n, d};
  return {b, n, s, d};
}

Shape antiquant_shape(const Params& p) {
  const int64_t n2 = kv_heads(p);
  const int64_t d = p.head_dim;
  const std::string& v = p.antiquant_shape;
  if (p.antiquant == QuantMode::kPerTensor || v == "2") return {2};
  if (v == "21ND") return {2, 1, n2, d};
  if (v == "2ND") return {2, n2, d};
  if (v == "2H") return {2, n2 * d};
  return {2, n2, 1, d};
}

Shape quant_shape(const Params& p) {
  const int64_t n = p.num_heads;
  const int64_t d = p.head_dim;
  const std::string& v = p.quant_shape;
  if (p.quant == QuantMode::kPerTensor || v == "1") return {1};
  if (v == "N1D") return {n, 1, d};
  if (v == "ND") return {n, d};
  if (v == "11ND") return {1, 1, n, d};
  if (v == "1ND") return {1, n, d};
  if (v == "1H") return {1, n * d};
  if (v == "11H") return {1, 1, n * d};
  if (v == "H") return {n * d};
  return {1, n, 1, d};
}

Shape mask_shape(const Params& p) {
  if (p.mask_rank == 2) return {p.batch, p.mask_seq};
  if (p.mask_rank == 3) return {p.batch, 1, p.mask_seq};
  return {p.batch, 1, 1, p.mask_seq};
}

// The optional tensors shared by specs and canonical_specs (mask and quant shapes differ).
void add_optionals(const Params& p, SpecMap& s) {
  s["pseShift"] = {p.dtype, {p.pse_batch, p.num_heads, 1, p.pse_seq}, p.has_pse};
  s["dequantScale1"] = {DType::kU64, {1}, false};
  s["quantScale1"] = {DType::kF32, {1}, false};
  s["dequantScale2"] = {DType::kU64, {1}, false};
  s["blocktable"] = {DType::kI32, {p.batch, p.max_block_num_per_seq}, is_paged(p)};
}

}  // namespace

bool Params::operator==(const Params& o) const {
  return dtype == o.dtype && kv_dtype == o.kv_dtype && out_dtype == o.out_dtype && batch == o.batch &&
         num_heads == o.num_heads && num_key_value_heads == o.num_key_value_heads && head_dim == o.head_dim &&
         seq == o.seq && input_layout == o.input_layout && scale_value == o.scale_value &&
         inner_precise == o.inner_precise && kv_cache == o.kv_cache && kv_seq_lens == o.kv_seq_lens &&
         has_actual_seq_lengths == o.has_actual_seq_lengths && actual_seq_lengths == o.actual_seq_lengths &&
         block_size == o.block_size && max_block_num_per_seq == o.max_block_num_per_seq &&
         block_num == o.block_num && has_pse == o.has_pse && pse_batch == o.pse_batch && pse_seq == o.pse_seq &&
         has_mask == o.has_mask && mask_dtype == o.mask_dtype && mask_rank == o.mask_rank &&
         mask_seq == o.mask_seq && antiquant == o.antiquant && has_antiquant_offset == o.has_antiquant_offset &&
         antiquant_shape == o.antiquant_shape && quant == o.quant && has_quant_offset == o.has_quant_offset &&
         quant_dtype == o.quant_dtype && quant_shape == o.quant_shape;
}

bool is_paged(const Params& p) { return p.kv_cache == KvCache::kPaged3d || p.kv_cache == KvCache::kPaged4d; }

int64_t kv_heads(const Params& p) { return p.num_key_value_heads == 0 ? p.num_heads : p.num_key_value_heads; }

int64_t group_size(const Params& p) {
  const int64_t n2 = kv_heads(p);
  return n2 > 0 ? p.num_heads / n2 : 1;
}

int64_t kv_capacity(const Params& p) {
  switch (p.kv_cache) {
    case KvCache::kTensor: return p.seq;
    case KvCache::kList: return p.kv_seq_lens.empty() ? 0 : *std::max_element(p.kv_seq_lens.begin(), p.kv_seq_lens.end());
    case KvCache::kPaged3d:
    case KvCache::kPaged4d: return p.max_block_num_per_seq * p.block_size;
  }
  return 0;
}

int64_t kv_tensor_len(const Params& p, int64_t b) {
  if (p.kv_cache == KvCache::kList) {
    return b < static_cast<int64_t>(p.kv_seq_lens.size()) ? p.kv_seq_lens[static_cast<size_t>(b)] : 0;
  }
  return kv_capacity(p);
}

std::vector<int64_t> effective_lengths(const Params& p) {
  std::vector<int64_t> l(static_cast<size_t>(std::max<int64_t>(p.batch, 0)));
  const auto& asl = p.actual_seq_lengths;
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t v = kv_tensor_len(p, b);
    if (p.has_actual_seq_lengths && asl.size() == 1) v = asl[0];
    if (p.has_actual_seq_lengths && static_cast<int64_t>(asl.size()) >= p.batch) v = asl[static_cast<size_t>(b)];
    l[static_cast<size_t>(b)] = v;
  }
  return l;
}

int64_t longest_effective_length(const Params& p) {
  int64_t longest = 0;
  for (int64_t l : effective_lengths(p)) longest = std::max(longest, l);
  return longest;
}

SpecMap specs(const Params& p) {
  const int64_t n2 = kv_heads(p);
  const int64_t d = p.head_dim;
  SpecMap s;
  const Shape q = layout_shape(p.input_layout, p.batch, p.num_heads, 1, d);
  s["query"] = {p.dtype, q, true};
  s["attentionOut"] = {p.out_dtype, q, true};
  switch (p.kv_cache) {
    case KvCache::kTensor:
      for (const char* name : {"key", "value"}) s[name] = {p.kv_dtype, layout_shape(p.input_layout, p.batch, n2, p.seq, d), true};
      break;
    case KvCache::kList:
      for (size_t b = 0; b < p.kv_seq_lens.size(); ++b) {
        for (const char* name : {"key", "value"}) {
          s[fmt::format("{}.{}", name, b)] = {p.kv_dtype, layout_shape(p.input_layout, 1, n2, p.kv_seq_lens[b], d), true};
        }
      }
      break;
    case KvCache::kPaged3d:
      for (const char* name : {"key", "value"}) s[name] = {p.kv_dtype, {p.block_num, p.block_size, n2 * d}, true};
      break;
    case KvCache::kPaged4d:
      for (const char* name : {"key", "value"}) s[name] = {p.kv_dtype, {p.block_num, n2, p.block_size, d}, true};
      break;
  }
  add_optionals(p, s);
  s["attenMask"] = {p.mask_dtype, mask_shape(p), p.has_mask};
  const bool int8_kv = p.antiquant != QuantMode::kNone;
  s["antiquantScale"] = {p.dtype, antiquant_shape(p), int8_kv};
  s["antiquantOffset"] = {p.dtype, antiquant_shape(p), int8_kv && p.has_antiquant_offset};
  const bool quant = p.quant != QuantMode::kNone;
  s["quantScale2"] = {p.quant_dtype, quant_shape(p), quant};
  s["quantOffset2"] = {p.quant_dtype, quant_shape(p), quant && p.has_quant_offset};
  return s;
}

SpecMap canonical_specs(const Params& p) {
  const int64_t n2 = kv_heads(p);
  const int64_t d = p.head_dim;
  SpecMap s;
  s["query"] = {p.dtype, {p.batch, p.num_heads, 1, d}, true};
  for (const char* name : {"key", "value"}) s[name] = {p.kv_dtype, {p.batch, n2, kv_capacity(p), d}, true};
  add_optionals(p, s);
  s["attenMask"] = {p.mask_dtype, {p.batch, p.mask_seq}, p.has_mask};
  const bool int8_kv = p.antiquant != QuantMode::kNone;
  const Shape aq = p.antiquant == QuantMode::kPerTensor ? Shape{2} : Shape{2, n2 * d};
  s["antiquantScale"] = {p.dtype, aq, int8_kv};
  s["antiquantOffset"] = {p.dtype, aq, int8_kv && p.has_antiquant_offset};
  const bool quant = p.quant != QuantMode::kNone;
  const Shape qs = p.quant == QuantMode::kPerTensor ? Shape{1} : Shape{p.num_heads * d};
  s["quantScale2"] = {p.quant_dtype, qs, quant};
  s["quantOffset2"] = {p.quant_dtype, qs, quant && p.has_quant_offset};
  for (auto it = s.begin(); it != s.end();) it = it->second.present ? std::next(it) : s.erase(it);
  return s;
}

Status check_data(const Params& p, const TensorMap& inputs) {
  const SpecMap want = canonical_specs(p);
  for (const auto& [name, spec] : want) {
    const auto it = inputs.find(name);
    if (it == inputs.end() || !it->second.defined()) return invalid_case(fmt::format("input {} is missing", name));
    if (it->second.dtype() != spec.dtype || it->second.shape() != spec.shape) {
      return invalid_case(fmt::format("input {} is {} {}, the canonical form is {} {}", name,
                                      dtype_name(it->second.dtype()), shape_to_string(it->second.shape()),
                                      dtype_name(spec.dtype), shape_to_string(spec.shape)));
    }
  }
  if (!is_paged(p)) return Status::ok();
  const Tensor& table = inputs.at("blocktable");
  const std::vector<int64_t> lengths = effective_lengths(p);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t used = ceil_div(lengths[static_cast<size_t>(b)], p.block_size);
    for (int64_t j = 0; j < used; ++j) {
      const auto blk = static_cast<int64_t>(table.get(b * p.max_block_num_per_seq + j));
      if (blk < 0 || blk >= p.block_num) {
        return invalid_case(fmt::format(
            "blocktable[{}][{}] = {} is read (L_b = {}) but outside [0, {}) (spec §1.3: 'entries that are read "
            "are used as unsigned indices, so they must be in [0, blocknum)')",
            b, j, blk, lengths[static_cast<size_t>(b)], p.block_num));
      }
    }
  }
  return Status::ok();
}

}  // namespace opgate::ref::incre_flash_attention_v3
