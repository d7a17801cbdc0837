// Double-precision reference of aclnnIncreFlashAttentionV4: aclnnIncreFlashAttentionV3 plus the
// optional input kvPaddingSize (KV left padding). Every V3 argument, check and formula is V3's
// (reference/incre_flash_attention_v3.h); V4 only moves each batch's KV window
// (cases/incre_flash_attention_v4/README.md, "Spec questions settled", with sources).
#pragma once

#include <cstdint>
#include <vector>

#include "core/reference_outputs.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/incre_flash_attention_v3.h"

namespace opgate::ref::incre_flash_attention_v4 {

namespace v3 = ::opgate::ref::incre_flash_attention_v3;
using v3::KvCache;
using v3::KvWindow;
using v3::QuantMode;

// Bumped whenever the reference's semantics change on purpose (golden-format.md).
constexpr int kReferenceVersion = 2;

// Problem descriptor: V3's, plus kvPaddingSize (an INT64 tensor of one element holding p).
struct Params {
  v3::Params base;
  bool has_kv_padding_size = false;
  int64_t kv_padding_size = 0;
  bool operator==(const Params& o) const {
    return base == o.base && has_kv_padding_size == o.has_kv_padding_size && kv_padding_size == o.kv_padding_size;
  }
};

// Whether left padding moves the windows: kvPaddingSize given, actualSeqLengths given and not empty,
// and KV one contiguous tensor (a tensor list or a page-attention cache keeps right padding).
bool padding_applies(const Params& p);

// The KV window of each batch (the formula of the V4 docs):
//   pad = max(p, 0); end_b = S - pad; start_b = end_b - L_b   (L_b as in V3, §1.3)
//   start_b < 0 (so also end_b < 0): the row is all zeros, the L_b = 0 row of §1.5 E1
//   attenMask and pseShift are read at the same absolute positions start_b .. end_b - 1
// Without padding_applies: V3's windows [0, L_b).
std::vector<KvWindow> windows(const Params& p);

// V3's descriptors plus kvPaddingSize (INT64, (1)) when present.
SpecMap specs(const Params& p);
// V3's canonical inputs plus kvPaddingSize (INT64, (1)) when present.
SpecMap canonical_specs(const Params& p);

// kvPaddingSize's checks (dtype INT64 -> else 161002 with the aclnn layer's dtype checks; one element
// -> else 561002) around V3's V1-V25 on the other descriptors.
Status validate(const Params& p, const SpecMap& specs);

// V3's data checks, and kvPaddingSize holding the case's p.
Status check_data(const Params& p, const TensorMap& inputs);

// V3's reference over windows(p): expected attentionOut and its error budget (V3's formula over the
// window's positions; README "Checks").
RefOutputs reference(const Params& p, const TensorMap& inputs);

}  // namespace opgate::ref::incre_flash_attention_v4
