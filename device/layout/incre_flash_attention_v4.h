// Device memory images of aclnnIncreFlashAttentionV4: V3's images with the used KV slots of each
// batch given by its left-padding window (ref::windows), every other slot poisoned, plus the
// kvPaddingSize tensor.
#pragma once

#include "core/tensor.h"
#include "reference/incre_flash_attention_v4.h"

namespace opgate::layout::incre_flash_attention_v4 {

using Params = ref::incre_flash_attention_v4::Params;

// Canonical inputs -> V3's images (layout::incre_flash_attention_v3::pack_window over ref::windows)
// and kvPaddingSize as given.
TensorMap pack(const Params& p, const TensorMap& canonical);
// The output buffer to allocate: attentionOut as described by `specs`.
SpecMap output_images(const Params& p, const SpecMap& specs);
// Output images -> canonical outputs (V3's).
TensorMap unpack(const Params& p, const TensorMap& images);

}  // namespace opgate::layout::incre_flash_attention_v4
