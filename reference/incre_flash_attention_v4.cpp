// Reference of aclnnIncreFlashAttentionV4: the windows of the KV left padding, the kvPaddingSize
// checks, and V3's reference, descriptors and checks for everything else.
#include "reference/incre_flash_attention_v4.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/aclnn_codes.h"
#include "reference/math/shared_validate.h"

namespace opgate::ref::incre_flash_attention_v4 {

bool padding_applies(const Params& p) {
  const v3::Params& b = p.base;
  return p.has_kv_padding_size && b.has_actual_seq_lengths && !b.actual_seq_lengths.empty() &&
         b.kv_cache == KvCache::kTensor;
}

std::vector<KvWindow> windows(const Params& p) {
  std::vector<KvWindow> w = v3::full_windows(p.base);
  if (!padding_applies(p)) return w;
  const int64_t pad = std::max<int64_t>(p.kv_padding_size, 0);
  for (KvWindow& x : w) {
    const int64_t end = p.base.seq - pad;
    const int64_t start = end - x.length;
    x = start < 0 ? KvWindow{0, 0, 0} : KvWindow{start, x.length, start};
  }
  return w;
}

SpecMap specs(const Params& p) {
  SpecMap s = v3::specs(p.base);
  s["kvPaddingSize"] = {DType::kI64, {1}, p.has_kv_padding_size};
  return s;
}

SpecMap canonical_specs(const Params& p) {
  SpecMap s = v3::canonical_specs(p.base);
  if (p.has_kv_padding_size) s["kvPaddingSize"] = {DType::kI64, {1}, true};
  return s;
}

Status validate(const Params& p, const SpecMap& specs) {
  SpecMap rest = specs;
  rest.erase("kvPaddingSize");
  const Status base = v3::validate(p.base, rest);
  const bool aclnn_layer = !base.is_ok() && (base.aclnn_code() == aclnn::kParamNullptr || base.aclnn_code() == aclnn::kParamInvalid);
  if (aclnn_layer) return base;
  const TensorSpec* pad = present_spec(specs, "kvPaddingSize");
  if (pad != nullptr && pad->dtype != DType::kI64) {
    return reject(aclnn::kParamInvalid, fmt::format("kvPaddingSize is {}", dtype_name(pad->dtype)),
                  "V4 doc: 'kvPaddingSize ... 数据类型支持INT64' (def: kv_padding_size DT_INT64)");
  }
  if (!base.is_ok()) return base;
  if (pad != nullptr && (pad->shape.size() != 1 || numel_sat(pad->shape) != 1)) {
    return reject(aclnn::kInnerTiling, fmt::format("kvPaddingSize has shape {}", shape_to_string(pad->shape)),
                  "FIA V4 doc: kvPaddingSize shape (1); tiling: 'KV PaddingSize input is invalid!'");
  }
  return Status::ok();
}

Status check_data(const Params& p, const TensorMap& inputs) {
  OPGATE_TRY(v3::check_data(p.base, inputs));
  // The mask is read at the keys' absolute positions, so it must reach the end of every window
  // (V3's V16 asks only for max L_b; the V4 doc: the mask must hide the padding correctly).
  for (const KvWindow& w : windows(p)) {
    if (p.base.has_mask && w.length > 0 && w.start + w.length > p.base.mask_seq) {
      return invalid_case(fmt::format("attenMask last dim {} ends before the KV window [{}, {})", p.base.mask_seq,
                                      w.start, w.start + w.length));
    }
  }
  if (!p.has_kv_padding_size) return Status::ok();
  const auto it = inputs.find("kvPaddingSize");
  if (it == inputs.end() || !it->second.defined() || it->second.dtype() != DType::kI64 || it->second.numel() != 1) {
    return invalid_case("input kvPaddingSize is missing or not one INT64 element");
  }
  if (static_cast<int64_t>(it->second.get(0)) != p.kv_padding_size) {
    return invalid_case(fmt::format("input kvPaddingSize holds {}, the case says {}",
                                    static_cast<int64_t>(it->second.get(0)), p.kv_padding_size));
  }
  return Status::ok();
}

RefOutputs reference(const Params& p, const TensorMap& inputs) {
  return v3::reference_window(p.base, inputs, windows(p));
}

}  // namespace opgate::ref::incre_flash_attention_v4
