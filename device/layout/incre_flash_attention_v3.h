// Device memory images of aclnnIncreFlashAttentionV3 (attention-and-ffn.md §1.2, §1.3): canonical
// BNSD tensors packed into the BSH/BNSD/BSND layouts, into a list of per-batch tensors, or scattered
// into a page-attention cache through the block table, with every KV slot the kernel must not read
// poisoned so that a wrong read shows in the output.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "reference/incre_flash_attention_v3.h"

namespace opgate::layout::incre_flash_attention_v3 {

using Params = ref::incre_flash_attention_v3::Params;

// Finite poison written into KV slots that are never read: key rows of a batch's own slots past
// L_b point along sign(q) of the group's first query head (so a read dominates the softmax),
// value rows hold kPoisonValue; unreferenced cache blocks hold kPoisonKey and kPoisonValue.
constexpr double kPoisonKey = 64.0;
constexpr double kPoisonValue = 4096.0;
constexpr double kPoisonInt8 = 127.0;

// Canonical inputs (ref::canonical_specs) -> the images the aclnn call receives, named as in
// ref::specs (key.<b>/value.<b> for a tensor list; absent optionals have no entry).
TensorMap pack(const Params& p, const TensorMap& canonical);
// pack() with the used KV slots of a dense or list cache given by per-batch windows (ref::KvWindow:
// canonical positions [start, start + length) are copied, the rest poisoned); page-attention caches
// ignore the windows' starts (left padding does not apply to them). pack(p, c) == pack_window(p, c,
// ref::full_windows(p)).
TensorMap pack_window(const Params& p, const TensorMap& canonical, const std::vector<ref::incre_flash_attention_v3::KvWindow>& windows);
// The output buffer to allocate: attentionOut as described by `specs`.
SpecMap output_images(const Params& p, const SpecMap& specs);
// Output images -> canonical outputs (attentionOut keeps the query's layout shape: with S = 1 all
// three layouts share one memory order, §1.3).
TensorMap unpack(const Params& p, const TensorMap& images);

}  // namespace opgate::layout::incre_flash_attention_v3
